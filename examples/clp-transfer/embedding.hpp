// An embedding matrix of a checkpoint, kept in the checkpoint's own element type, and handed
// to the core library as a clp::matrix_view of that type (no conversion copy).
//
// Inputs are mapped read-only from their safetensors file (no copy at all); outputs live in
// memory the program allocates. Both avoid the cost that dominated reading on the machines we
// measured: faulting in hundreds of MB of fresh 4 KiB pages (README, "Speed and memory").
#pragma once

#include <clp/detail/erased_view.hpp>
#include <clp/detail/scratch_buffer.hpp>
#include <clp/matrix_view.hpp>

#include <Eigen/Core>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "io/hf_model.hpp"
#include "io/safetensors.hpp"

namespace clp::program {

class embedding_matrix {
 public:
  /// Maps tensor `name` of `folder`; it must be 2-D, F32, F64, F16 or BF16, and finite. A
  /// tensor whose bytes are not aligned for its element type (the format allows it) is read
  /// into memory instead.
  static embedding_matrix read(const io::model_folder& folder, const std::string& name) {
    const io::located_tensor found = folder.locate(name);
    const io::tensor_entry& tensor = found.tensor;
    const std::string where = found.file.path().string();
    if (tensor.shape.size() != 2)
      io::detail::fail(where, "tensor " + io::detail::quoted_name(name) + " has shape " +
                                  io::detail::format_shape(tensor.shape) + ", not [rows, cols]");
    embedding_matrix m(std::string(io::dtype_name(tensor.dtype)), tensor.shape[0], tensor.shape[1],
                       where + " tensor " + io::detail::quoted_name(name),
                       /*allocate=*/false);
    if (tensor.byte_size > 0 && tensor.offset % m.element_size_ == 0) {
      m.mapping_ = found.file.map(tensor);
      m.data_ = const_cast<void*>(m.mapping_.data());  // never written: writable_ stays false
    } else {
      m.data_ = m.memory_.reserve(tensor.byte_size);
      found.file.read(tensor, m.data_, tensor.byte_size);
    }
    m.require_finite();
    return m;
  }

  /// A rows x cols matrix of `dtype` in memory, uninitialised: every element must be written.
  embedding_matrix(const std::string& dtype, Index rows, Index cols, std::string description)
      : embedding_matrix(dtype, rows, cols, std::move(description), /*allocate=*/true) {}

  const std::string& dtype() const { return dtype_; }
  Index rows() const { return rows_; }
  Index cols() const { return cols_; }
  /// "FILE tensor NAME", for messages.
  const std::string& description() const { return description_; }

  /// Calls f with a clp::matrix_view<T> of the matrix (row-major, as safetensors stores it).
  /// Only matrices made by the constructor (outputs) can be visited for writing.
  template <class F>
  decltype(auto) visit(F&& f) {
    if (!writable_) throw std::logic_error(description_ + " is read-only");
    return dispatch([&](auto* tag) { return f(clp::matrix_view(static_cast<decltype(tag)>(data_), rows_, cols_)); });
  }
  template <class F>
  decltype(auto) visit(F&& f) const {
    return dispatch([&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      return f(clp::matrix_view(static_cast<const T*>(data_), rows_, cols_));
    });
  }

  const void* bytes() const { return data_; }
  std::size_t byte_size() const { return static_cast<std::size_t>(rows_ * cols_) * element_size_; }

 private:
  embedding_matrix(const std::string& dtype, Index rows, Index cols, std::string description, bool allocate)
      : dtype_(dtype), rows_(rows), cols_(cols), description_(std::move(description)) {
    if (dtype == "F32" || dtype == "F64" || dtype == "F16" || dtype == "BF16")
      element_size_ = io::dtype_size(*io::parse_dtype(dtype));
    else
      throw std::runtime_error(description_ + ": dtype " + dtype + " is not an embedding type (F32, F64, F16 or BF16)");
    if (allocate) {
      data_ = memory_.reserve(byte_size());
      writable_ = true;
    }
  }

  /// Calls f with a null T* naming the element type.
  template <class F>
  decltype(auto) dispatch(F&& f) const {
    if (dtype_ == "F32") return f(static_cast<float*>(nullptr));
    if (dtype_ == "F64") return f(static_cast<double*>(nullptr));
    if (dtype_ == "F16") return f(static_cast<Eigen::half*>(nullptr));
    return f(static_cast<Eigen::bfloat16*>(nullptr));
  }

  void require_finite() const {
    dispatch([&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      const Index at = clp::detail::first_non_finite(static_cast<const T*>(data_), rows_ * cols_);
      if (at < 0) return;
      throw std::runtime_error(description_ + ": row " + std::to_string(at / cols_) + " column " +
                               std::to_string(at % cols_) + " is NaN or infinite");
    });
  }

  std::string dtype_;
  Index rows_ = 0, cols_ = 0;
  std::string description_;
  std::size_t element_size_ = 0;
  io::mapped_bytes mapping_;  // inputs
  // Outputs, and inputs that could not be mapped: uninitialised, in transparent huge pages
  // from 2 MiB on (a few hundred page faults instead of one per 4 KiB).
  clp::detail::scratch_buffer<std::byte> memory_;
  void* data_ = nullptr;
  bool writable_ = false;
};

}  // namespace clp::program
