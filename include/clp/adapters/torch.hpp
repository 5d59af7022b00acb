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

#define CLP_PUBLIC_HEADER_INCLUDED
#include <clp/detail/adapters/torch_view.hpp>
#include <clp/matrix_view.hpp>

#include <ATen/core/Tensor.h>

namespace clp {

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
