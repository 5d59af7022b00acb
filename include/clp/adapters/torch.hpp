// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// clp::matrix_traits for libtorch tensors: `at::Tensor`, which `torch::Tensor` names, so a
/// trainer passes its parameters (or their `.data()`, `.detach()`, a `narrow`ed or transposed
/// view of them) to every algorithm as they are. Include this header yourself and link your
/// target to libtorch (`find_package(Torch)`, target `torch`); the core never needs it.
///
/// What it views, without a copy:
/// - CPU tensors of dtype float32, float64, float16 (`torch::kHalf`) and bfloat16, strided.
/// - 2-D tensors, `#rows by cols`: row-major when the column stride is 1 (outer stride
///   `stride(0)`), column-major when the row stride is 1 (outer stride `stride(1)`: a `.t()` of a
///   contiguous tensor). So a contiguous tensor, a transposed one and a `narrow`ed one (rows or
///   columns) are all views.
/// - 1-D tensors of n values as `n by 1` (outer stride `stride(0)`): a per-token bias, the way
///   `matrix_pairs` takes one. A `[1, n]` tensor is one row of n: pass `.t()` or `.squeeze(0)`,
///   both views.
///
/// What it refuses, with a clp::error whose problem() says why and what to do (context
/// "clp::make_view"):
/// - clp::invalid_argument: an undefined tensor (a default-constructed `torch::Tensor`).
/// - clp::unsupported_layout, memory the library cannot view without a copy; each is fixed by a
///   copy you make and can see: a tensor on another device (CUDA, meta, ...: `.cpu()` it, and
///   write an output back with `param.copy_(cpu_output)`), another dtype (integers, complex,
///   quantized: `.to(torch::kFloat)`), a sparse, mkldnn or nested tensor, a lazily negated view
///   (`resolve_neg()`), a 0-D or 3-D or higher tensor (`reshape` it to 2-D), and strides no
///   strided matrix has: neither dimension contiguous (a slice with a step: `.contiguous()`),
///   or rows that overlap (stride 0 of an `expand`ed tensor).
///
/// Writing (an output, the non-const overload) follows PyTorch's own rule for in-place
/// operations, because the library writes through the data pointer where autograd cannot see it:
/// - a tensor that requires grad is refused (clp::invalid_argument) while gradient mode is on.
///   PyTorch refuses an in-place operation on a leaf that requires grad for the same reason; a
///   non-leaf (a view of such a parameter, say) would get a gradient that ignores the write.
///   Initialise parameters inside a `torch::NoGradGuard` scope, as `torch::nn::init` does.
/// - an inference tensor (made under `c10::InferenceMode`) is refused outside inference mode,
///   as PyTorch refuses in-place updates of one there.
/// - the tensor's version counter is bumped when the write view is made, as an in-place operation
///   bumps it, so a backward pass through values saved before the write fails loudly ("modified
///   by an inplace operation") instead of computing a wrong gradient. Views share the counter of
///   their base; `.detach()` shares it too; `.data()` has one of its own (PyTorch's documented
///   difference between the two), so only `.data()` hides the write from that check.
/// An output must be a non-const `at::Tensor`: an rvalue (`param.data()`, `w.narrow(0, 0, n)`)
/// or a named handle; a `const at::Tensor&` gives the read-only view, as for every matrix type.

#include <clp/error.hpp>
#include <clp/matrix_view.hpp>

#include <ATen/core/Tensor.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

#include <cstdint>
#include <sstream>
#include <string>

namespace clp {
namespace detail {

/// "float32 tensor of shape [4, 3] on cpu": how the messages name the tensor at fault.
inline std::string describe_tensor(const at::Tensor& t) {
  std::ostringstream text;
  text << "torch::Tensor of dtype " << c10::toString(t.scalar_type()) << " and shape [";
  for (std::int64_t d = 0; d < t.dim(); ++d) text << (d ? ", " : "") << t.size(d);
  text << "] on " << t.device();
  return text.str();
}

[[noreturn]] inline void refuse_tensor_layout(const at::Tensor& t, const std::string& why) {
  throw unsupported_layout(error_facts::in("clp::make_view"), describe_tensor(t) + ": " + why);
}

/// The element type of a tensor's dtype, or a refusal.
inline element_type element_type_of_tensor(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::ScalarType::Float:
      return element_type::float32;
    case at::ScalarType::Double:
      return element_type::float64;
    case at::ScalarType::Half:
      return element_type::float16;
    case at::ScalarType::BFloat16:
      return element_type::bfloat16;
    default:
      break;
  }
  refuse_tensor_layout(t,
                       "the library reads float32, float64, float16 (Half) and bfloat16 (BFloat16) elements; "
                       "convert it with .to(torch::kFloat), a copy you can see");
}

/// The checks every view makes, read or write, then the strided 2-D view of t's memory.
/// Void is const void (an input) or void (an output).
template <class Void>
matrix_view<Void> view_tensor(const at::Tensor& t) {
  if (!t.defined())
    throw invalid_argument(error_facts::in("clp::make_view"),
                           "torch::Tensor is undefined (default-constructed): there is no matrix to view");
  if (!t.device().is_cpu())
    refuse_tensor_layout(t,
                         "the library reads and writes CPU memory only; bring the tensor over with .cpu() "
                         "(a copy you can see) and, for an output, copy the result back with "
                         "tensor.copy_(cpu_result) inside a torch::NoGradGuard scope");
  if (t.layout() != at::kStrided || t.is_nested() || !t.has_storage()) {
    std::ostringstream layout;
    layout << t.layout();
    refuse_tensor_layout(t, std::string("has layout ") + layout.str() + (t.is_nested() ? " (nested)" : "") +
                                ", not a strided array of its own; the library views strided CPU memory only: "
                                "make a dense copy you can see (.to_dense(), .contiguous())");
  }
  const element_type type = element_type_of_tensor(t);
  if (t.is_neg())
    refuse_tensor_layout(t,
                         "is a lazily negated view (its memory holds the values' negatives); "
                         ".resolve_neg() makes the copy you can see");
  if (t.dim() != 1 && t.dim() != 2)
    refuse_tensor_layout(t, "is " + std::to_string(t.dim()) +
                                "-D; the library takes a matrix (#rows by cols) or a 1-D vector of a value per "
                                "row (#rows by 1): reshape it to 2-D first (.reshape or .flatten, a view when "
                                "its strides allow)");

  // A 1-D tensor of n values is n rows of one value each.
  const Index rows = t.size(0), cols = t.dim() == 2 ? t.size(1) : 1;
  const Index row_stride = t.stride(0), col_stride = t.dim() == 2 ? t.stride(1) : 1;
  Void* const data = t.data_ptr();
  if (rows == 0 || cols == 0) return {data, type, rows, cols, cols, storage_order::row_major};

  // A dimension of extent 1 has no meaningful stride (PyTorch keeps whatever the tensor was
  // made with), so the order is decided by the dimensions that have extent, as for xtensor.
  const auto strides_text = [&] { return "(" + std::to_string(row_stride) + ", " + std::to_string(col_stride) + ")"; };
  if (cols == 1 || col_stride == 1) {
    if (rows > 1 && row_stride < cols)
      refuse_tensor_layout(t, "has strides " + strides_text() +
                                  ": its rows overlap in memory (an expand()ed or broadcast tensor); "
                                  ".contiguous() makes a copy you can see");
    return {data, type, rows, cols, rows == 1 ? cols : row_stride, storage_order::row_major};
  }
  if (rows == 1 || row_stride == 1) {
    if (col_stride < rows)
      refuse_tensor_layout(t, "has strides " + strides_text() +
                                  ": its columns overlap in memory (an expand()ed or broadcast tensor); "
                                  ".contiguous() makes a copy you can see");
    return {data, type, rows, cols, col_stride, storage_order::column_major};
  }
  refuse_tensor_layout(t, "has strides " + strides_text() +
                              ": neither dimension is contiguous (an inner stride other than 1, a slice with a "
                              "step), so it cannot be viewed as a matrix; .contiguous() makes a copy you can see");
}

/// The write view: view_tensor's checks, PyTorch's rules for an in-place write, and the version
/// bump an in-place operation makes (see the file comment).
inline matrix_view<void> writable_view_tensor(const at::Tensor& t) {
  matrix_view<void> view = view_tensor<void>(t);
  if (t.requires_grad() && c10::GradMode::is_enabled())
    throw invalid_argument(error_facts::in("clp::make_view"),
                           describe_tensor(t) +
                               " requires grad and gradient mode is on: writing it in place would change it "
                               "behind autograd's back (PyTorch refuses in-place operations on a leaf that "
                               "requires grad for the same reason); write it inside a torch::NoGradGuard "
                               "scope, as torch::nn::init does");
  if (t.is_inference() && !c10::InferenceMode::is_enabled())
    throw invalid_argument(error_facts::in("clp::make_view"),
                           describe_tensor(t) +
                               " is an inference tensor and inference mode is off: PyTorch forbids in-place "
                               "updates of one outside c10::InferenceMode; write it inside an InferenceMode "
                               "scope, or write a .clone() of it");
  t.unsafeGetTensorImpl()->bump_version();
  return view;
}

}  // namespace detail

/// Any at::Tensor (torch::Tensor) the file comment lists, as a #rows by cols matrix (a 1-D
/// tensor of n values: n by 1).
template <>
struct matrix_traits<at::Tensor> {
  /// Read access: an input. Its element type is the tensor's dtype, known at run time.
  static matrix_view<const void> view(const at::Tensor& t) { return detail::view_tensor<const void>(t); }
  /// Write access: an output, written in place into the tensor's memory.
  static matrix_view<void> view(at::Tensor& t) { return detail::writable_view_tensor(t); }
};

}  // namespace clp
