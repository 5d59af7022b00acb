// SPDX-License-Identifier: MIT
#pragma once

// Internal, adapters: the checks and the strided view behind clp::matrix_traits<at::Tensor>
// (<clp/adapters/torch.hpp>, whose file comment lists what is viewed and what refused).
#include <clp/detail/internal_header_check.hpp>

#include <clp/element_type.hpp>
#include <clp/error.hpp>
#include <clp/matrix_view.hpp>

#include <ATen/core/Tensor.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

#include <cstdint>
#include <sstream>
#include <string>

namespace clp::detail {

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

}  // namespace clp::detail
