// An embedding matrix read from a checkpoint, kept in the checkpoint's own element type, and
// handed to the core library as a clp::matrix_view of that type (no conversion copy).
#pragma once

#include <clp/matrix_view.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "io/hf_model.hpp"
#include "io/safetensors.hpp"

namespace clp::program {

/// An allocator that default-initialises: a vector of floats that is about to be filled by a
/// read or by the synthesis is not zeroed first (hundreds of MB for a real vocabulary).
template <class T>
struct default_init_allocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = default_init_allocator<U>;
  };
  using std::allocator<T>::allocator;
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
template <class T>
using uninitialized_vector = std::vector<T, default_init_allocator<T>>;

class embedding_matrix {
 public:
  using storage = std::variant<uninitialized_vector<float>, uninitialized_vector<double>,
                               uninitialized_vector<Eigen::half>, uninitialized_vector<Eigen::bfloat16>>;

  /// Reads tensor `name` of `folder`; it must be 2-D, F32, F64, F16 or BF16, and finite.
  static embedding_matrix read(const io::model_folder& folder, const std::string& name) {
    const io::located_tensor found = folder.locate(name);
    const io::tensor_entry& tensor = found.tensor;
    const std::string where = found.file.path().string();
    if (tensor.shape.size() != 2)
      io::detail::fail(where, "tensor " + io::detail::quoted_name(name) + " has shape " +
                                  io::detail::format_shape(tensor.shape) + ", not [rows, cols]");
    embedding_matrix m(tensor.dtype, tensor.shape[0], tensor.shape[1],
                       where + " tensor " + io::detail::quoted_name(name));
    std::visit([&](auto& v) { found.file.read(tensor, v.data(), v.size() * sizeof(v[0])); }, m.data_);
    m.require_finite();
    return m;
  }

  /// A rows x cols matrix of `dtype`, uninitialised: every element must be written.
  embedding_matrix(const std::string& dtype, index rows, index cols, std::string description)
      : dtype_(dtype), rows_(rows), cols_(cols), description_(std::move(description)) {
    const auto n = static_cast<std::size_t>(rows * cols);
    if (dtype == "F32")
      data_ = uninitialized_vector<float>(n);
    else if (dtype == "F64")
      data_ = uninitialized_vector<double>(n);
    else if (dtype == "F16")
      data_ = uninitialized_vector<Eigen::half>(n);
    else if (dtype == "BF16")
      data_ = uninitialized_vector<Eigen::bfloat16>(n);
    else
      throw std::runtime_error(description_ + ": dtype " + dtype + " is not an embedding type (F32, F64, F16 or BF16)");
  }

  const std::string& dtype() const { return dtype_; }
  index rows() const { return rows_; }
  index cols() const { return cols_; }
  /// "FILE tensor NAME", for messages.
  const std::string& description() const { return description_; }

  /// Calls f with a clp::matrix_view of the matrix (row-major, as safetensors stores it).
  template <class F>
  decltype(auto) visit(F&& f) {
    return std::visit([&](auto& v) { return f(clp::matrix_view(v.data(), rows_, cols_)); }, data_);
  }
  template <class F>
  decltype(auto) visit(F&& f) const {
    return std::visit([&](const auto& v) { return f(clp::matrix_view(v.data(), rows_, cols_)); }, data_);
  }

  const void* bytes() const {
    return std::visit([](const auto& v) { return static_cast<const void*>(v.data()); }, data_);
  }
  std::size_t byte_size() const {
    return std::visit([](const auto& v) { return v.size() * sizeof(v[0]); }, data_);
  }

 private:
  void require_finite() const {
    std::visit(
        [&](const auto& v) {
          // One flat pass over the contiguous storage; the position is worked out only on failure.
          const auto bad = std::find_if(v.begin(), v.end(), [](auto x) { return !std::isfinite(float(x)); });
          if (bad == v.end()) return;
          const auto at = static_cast<index>(bad - v.begin());
          throw std::runtime_error(description_ + ": row " + std::to_string(at / cols_) + " column " +
                                   std::to_string(at % cols_) + " is NaN or infinite");
        },
        data_);
  }

  std::string dtype_;
  index rows_ = 0, cols_ = 0;
  std::string description_;
  storage data_;
};

}  // namespace clp::program
