// An embedding matrix of a checkpoint, kept in the checkpoint's own element type, and handed
// to the core library as a clp::matrix_view of that type (no conversion copy).
//
// Inputs are mapped read-only from their safetensors file (no copy at all); outputs live in
// memory the program allocates. Both avoid the cost that dominated reading on the machines we
// measured: faulting in hundreds of MB of fresh 4 KiB pages (README, "Speed and memory").
#pragma once

#include <clp/detail/erased_view.hpp>
#include <clp/parallel.hpp>
#include <clp/detail/scratch_buffer.hpp>
#include <clp/matrix_view.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "io/hf_model.hpp"
#include "io/safetensors.hpp"

#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace clp::program {

class embedding_matrix {
 public:
  /// Maps tensor `name` of `folder`; it must be 2-D, F32, F64, F16 or BF16. A tensor whose
  /// bytes are not aligned for its element type (the format allows it) is read into memory
  /// instead. Nothing is screened yet: see require_finite.
  static embedding_matrix read(const io::model_folder& folder, const std::string& name) {
    const io::located_tensor found = folder.locate(name);
    const io::tensor_entry& tensor = found.tensor;
    if (tensor.shape.size() != 2)
      io::detail::fail(found.file.path(), "tensor " + io::detail::quoted_name(name) + " has shape " +
                                              io::detail::format_shape(tensor.shape) + ", not [rows, cols]");
    return read(found, tensor.shape[0], tensor.shape[1]);
  }

  /// Tensor `name` of `folder` of any shape, seen as the rows x cols matrix its row-major bytes
  /// are: a per-token bias [V] or [1, V] as V x 1, a [1, V, a, b] tensor as V x (a * b). Its
  /// element count must be rows * cols.
  static embedding_matrix read(const io::model_folder& folder, const std::string& name, Index rows, Index cols) {
    const io::located_tensor found = folder.locate(name);
    std::int64_t count = 1;
    for (std::int64_t d : found.tensor.shape) count *= d;
    if (count != rows * cols)
      io::detail::fail(found.file.path(), "tensor " + io::detail::quoted_name(name) + " has shape " +
                                              io::detail::format_shape(found.tensor.shape) + ", not " +
                                              std::to_string(rows) + " x " + std::to_string(cols) + " values");
    return read(found, rows, cols);
  }

  /// A rows x cols matrix of `dtype` in memory, uninitialised: every element must be written.
  embedding_matrix(io::dtype dtype, Index rows, Index cols, std::string description)
      : embedding_matrix(dtype, rows, cols, std::move(description), /*allocate=*/true) {}

  /// The safetensors dtype: F32, F64, F16 or BF16.
  io::dtype dtype() const { return dtype_; }
  /// Its name as a safetensors header writes it, for messages.
  std::string dtype_name() const { return std::string(io::dtype_name(dtype_)); }
  Index rows() const { return rows_; }
  Index cols() const { return cols_; }
  /// "FILE tensor NAME", for messages.
  const std::string& description() const { return description_; }

  /// Calls f with a clp::matrix_view<const T> of the matrix (row-major, as safetensors stores
  /// it), T its element type.
  template <class F>
  decltype(auto) visit(F&& f) const {
    return clp::detail::visit_kind(erased(), [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      return f(view<const T>());
    });
  }

  /// The matrix as a clp::matrix_view<T>, T (const or not) its element type; a writable view
  /// only of a matrix made by the constructor (an output).
  template <class T>
  clp::matrix_view<T> view() const {
    if (clp::detail::kind_of<std::remove_const_t<T>>() != kind_)
      throw std::logic_error(description_ + " is " + dtype_name() + ", not the element type asked for");
    if (!std::is_const_v<T> && !writable_) throw std::logic_error(description_ + " is read-only");
    return clp::matrix_view<T>(static_cast<T*>(data_), rows_, cols_);
  }

  /// Throws naming the file, row and column of the first NaN or infinite element.
  void require_finite() const {
    visit([&](auto v) {
      const Index at = clp::detail::first_non_finite(v.data(), rows_ * cols_);
      if (at >= 0) fail_non_finite(at / cols_, at % cols_);
    });
  }

  /// The same for rows `rows` (ascending) only, screened in parallel: the first such row is
  /// named whichever thread found it.
  void require_finite(const std::vector<Index>& rows, int threads) const {
    constexpr Index chunk = 1024;
    const Index n = static_cast<Index>(rows.size());
    std::vector<Index> first_bad(static_cast<std::size_t>((n + chunk - 1) / chunk), -1);  // per chunk
    visit([&](auto v) {
      clp::detail::parallel_for(Index(first_bad.size()), clp::detail::resolve_threads(threads), [&](Index k, int) {
        for (Index i = k * chunk; i < std::min(n, (k + 1) * chunk) && first_bad[k] < 0; ++i)
          if (clp::detail::first_non_finite(v.data() + rows[i] * cols_, cols_) >= 0) first_bad[k] = rows[i];
      });
      for (Index row : first_bad)
        if (row >= 0) fail_non_finite(row, clp::detail::first_non_finite(v.data() + row * cols_, cols_));
    });
  }

  const void* bytes() const { return data_; }
  /// Hands the memory pages wholly inside bytes [offset, offset + size) of an output back to
  /// the kernel; they read as zero afterwards. For the write phase, once those bytes are
  /// written for the last time: the page cache the next bytes fill then reuses memory this
  /// process already faulted in (see write_output.hpp). Best effort: a failure changes nothing.
  void release_pages(std::size_t offset, std::size_t size) {
    if (!writable_) throw std::logic_error(description_ + " is read-only");
#ifdef __linux__
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto start = reinterpret_cast<std::uintptr_t>(data_) + offset;
    const std::uintptr_t begin = (start + page - 1) / page * page, end = (start + size) / page * page;
    if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
#else
    (void)offset;
    (void)size;
#endif
  }
  std::size_t byte_size() const { return static_cast<std::size_t>(rows_ * cols_) * element_size(); }

 private:
  embedding_matrix(io::dtype dtype, Index rows, Index cols, std::string description, bool allocate)
      : dtype_(dtype), rows_(rows), cols_(cols), description_(std::move(description)) {
    switch (dtype) {
      case io::dtype::f32:
        kind_ = clp::detail::scalar_kind::f32;
        break;
      case io::dtype::f64:
        kind_ = clp::detail::scalar_kind::f64;
        break;
      case io::dtype::f16:
        kind_ = clp::detail::scalar_kind::f16;
        break;
      case io::dtype::bf16:
        kind_ = clp::detail::scalar_kind::bf16;
        break;
      default:
        throw io::error(description_ + ": dtype " + std::string(io::dtype_name(dtype)) +
                        " is not an embedding type (F32, F64, F16 or BF16)");
    }
    if (allocate) {
      data_ = memory_.reserve(byte_size());
      writable_ = true;
    }
  }

  static embedding_matrix read(const io::located_tensor& found, Index rows, Index cols) {
    const io::tensor_entry& tensor = found.tensor;
    const std::string where = found.file.path().string();
    embedding_matrix m(tensor.dtype, rows, cols, where + " tensor " + io::detail::quoted_name(tensor.name),
                       /*allocate=*/false);
    if (tensor.byte_size > 0 && tensor.offset % m.element_size() == 0) {
      m.mapping_ = found.file.map(tensor);
      m.data_ = const_cast<void*>(m.mapping_.data());  // never written: writable_ stays false
    } else {
      m.data_ = m.memory_.reserve(tensor.byte_size);
      found.file.read(tensor, m.data_, tensor.byte_size);
    }
    return m;
  }

  /// The library's type-erased view: its visit_kind is the one dispatch on the element type.
  clp::detail::input_view erased() const { return {data_, kind_, rows_, cols_, cols_, 1}; }
  [[noreturn]] void fail_non_finite(Index row, Index column) const {
    throw io::error(description_ + ": row " + std::to_string(row) + " column " + std::to_string(column) +
                    " is NaN or infinite");
  }
  std::size_t element_size() const {
    return clp::detail::visit_kind(erased(), [](auto* tag) { return sizeof(*tag); });
  }

  io::dtype dtype_;
  clp::detail::scalar_kind kind_ = clp::detail::scalar_kind::f32;
  Index rows_ = 0, cols_ = 0;
  std::string description_;
  io::mapped_bytes mapping_;  // inputs
  // Outputs, and inputs that could not be mapped: uninitialised, in transparent huge pages
  // from 2 MiB on (a few hundred page faults instead of one per 4 KiB).
  clp::detail::scratch_buffer<std::byte> memory_;
  void* data_ = nullptr;
  bool writable_ = false;
};

}  // namespace clp::program
