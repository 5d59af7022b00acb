// An embedding matrix of a checkpoint, kept in the checkpoint's own element type and handed to
// the library as a view whose element type is a run-time value (clp::matrix_view<const void>):
// no conversion copy, and one compiled engine for every type.
//
// Inputs are mapped read-only from their safetensors file (no copy at all); outputs live in
// memory the program allocates in huge pages. Both avoid faulting in hundreds of MB of fresh
// 4 KiB pages.
#pragma once

#include <clp/error.hpp>
#include <clp/finite.hpp>
#include <clp/matrix_view.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "io/errors.hpp"
#include "io/model_weights.hpp"
#include "io/safetensors.hpp"

#include "io/library_names.hpp"

namespace clp_transfer {

/// Uninitialised memory for an output matrix, 2 MiB-aligned from 2 MiB on and offered to Linux
/// as transparent huge pages: a few hundred page faults instead of one per 4 KiB. From 2 MiB
/// on it is a mapping of its own (Linux), whose pages can be moved within it (move_pages).
class page_buffer {
 public:
  /// The transparent huge page size the buffers are aligned to (x86-64, and arm64 with 4 KiB pages).
  static constexpr std::size_t huge_page = std::size_t(2) << 20;

  explicit page_buffer(std::size_t bytes = 0);
  void* data() const { return memory_.get(); }
  /// The bytes it holds: the size asked for, rounded up to its alignment.
  std::size_t size() const { return size_; }

  /// Moves the memory pages of bytes [from, from + size) to [to, to + size), one huge page at a
  /// time, without copying or zeroing them; returns how many bytes moved (all of them, or up to
  /// the first the system refused). The two ranges must not overlap, every bound must be a
  /// multiple of huge_page within size(), and nothing may read or write [to, to + size) while
  /// this runs (its pages, if any, are dropped). The range moved from stays this buffer's and
  /// reads as zero afterwards. Moves nothing but on Linux (5.7 on), in a buffer of its own
  /// mapping.
  std::size_t move_pages(std::size_t from, std::size_t size, std::size_t to);

 private:
  struct release {
    std::size_t mapped = 0;  ///< bytes of a mapping of its own, 0 for memory from aligned_alloc
    void operator()(void* p) const;
  };
#ifdef __linux__
  /// `size` bytes (a multiple of huge_page) mapped privately, starting on a huge page.
  static std::unique_ptr<void, release> map_aligned(std::size_t size);
#endif
  std::unique_ptr<void, release> memory_{nullptr, release{}};
  std::size_t size_ = 0;
};

/// The library's element type of a safetensors dtype; nullopt for a dtype that is not one.
std::optional<clp::element_type> element_type_of(io::dtype dtype);

/// A 2-D matrix of a checkpoint (an input, mapped) or of the output (in memory), in its own dtype.
class embedding_matrix {
 public:
  /// Maps tensor `name` of `weights`; it must be 2-D, F32, F64, F16 or BF16. Nothing is screened
  /// yet: see require_finite.
  static embedding_matrix read(const io::model_weights& weights, const std::string& name);
  /// Tensor `name` of `weights` of any shape, seen as the rows x cols matrix its row-major bytes
  /// are: a per-token bias [V] or [1, V] as V x 1, a [1, V, a, b] tensor as V x (a * b). Its
  /// element count must be rows * cols.
  static embedding_matrix read(const io::model_weights& weights, const std::string& name, Index rows, Index cols);

  /// A rows x cols output matrix of `dtype` in memory, uninitialised: every element must be
  /// written. `name` says what it is, for messages ("output lm_head.weight").
  embedding_matrix(io::dtype dtype, Index rows, Index cols, std::string name)
      : embedding_matrix(dtype, rows, cols, {}, std::move(name)) {
    memory_ = page_buffer(byte_size());
    data_ = memory_.data();
    writable_ = true;
  }

  io::dtype dtype() const { return dtype_; }
  /// The dtype as a safetensors header writes it, for messages.
  std::string dtype_name() const { return std::string(io::dtype_name(dtype_)); }
  Index rows() const { return rows_; }
  Index cols() const { return cols_; }
  /// Where the matrix came from, as the facts of an error about it: the file and tensor of an
  /// input; only the name of an output.
  clp::error_facts origin() const { return io::about(file_, tensor_); }
  /// "FILE tensor "NAME"", for messages that name it in passing.
  std::string description() const {
    return file_.empty() ? tensor_ : file_.string() + " tensor " + io::quoted_name(tensor_);
  }

  /// The matrix (row-major, as safetensors stores it), its element type a run-time value.
  clp::matrix_view<const void> view() const {
    return {data_, type_, rows_, cols_, cols_, clp::storage_order::row_major};
  }
  /// The same, writable: only of an output (a matrix made by the constructor).
  clp::matrix_view<void> output_view() const {
    if (!writable_) throw std::logic_error(description() + " is read-only");
    return {data_, type_, rows_, cols_, cols_, clp::storage_order::row_major};
  }
  /// Calls f with the typed view (clp::matrix_view<const T>, T the element type).
  template <class F>
  decltype(auto) visit(F&& f) const {
    return clp::visit(view(), std::forward<F>(f));
  }

  const void* bytes() const { return data_; }
  std::size_t byte_size() const { return static_cast<std::size_t>(rows_ * cols_) * clp::element_size(type_); }

  /// Hands the memory pages wholly inside bytes [offset, offset + size) of an output back to the
  /// kernel; they read as zero afterwards. For rows written to disk for the last time (see
  /// transfer/weights_output.hpp). Best effort: a failure changes nothing.
  void release_pages(std::size_t offset, std::size_t size);
  /// The bytes of an output's memory (byte_size rounded up to its pages): the range move_pages
  /// may use.
  std::size_t memory_size() const { return memory_.size(); }
  /// Moves the memory pages of bytes [from, from + size) of an output to [to, to + size) (see
  /// page_buffer::move_pages, whose conditions hold here too): for rows written to disk for
  /// the last time, moved to rows nothing has written yet, which then need no fresh memory.
  /// Returns the bytes moved; those it moved from read as zero afterwards.
  std::size_t move_pages(std::size_t from, std::size_t size, std::size_t to) {
    if (!writable_) throw std::logic_error(description() + " is read-only");
    return memory_.move_pages(from, size, to);
  }

 private:
  embedding_matrix(io::dtype dtype, Index rows, Index cols, std::filesystem::path file, std::string tensor)
      : dtype_(dtype), rows_(rows), cols_(cols), file_(std::move(file)), tensor_(std::move(tensor)) {
    const auto type = element_type_of(dtype);
    if (!type)
      throw io::malformed_file(file_, "is " + dtype_name() + ", not an embedding type (F32, F64, F16 or BF16)",
                               tensor_);
    type_ = *type;
  }
  static embedding_matrix map(const io::located_tensor& found, Index rows, Index cols);

  io::dtype dtype_;
  clp::element_type type_ = clp::element_type::float32;
  Index rows_ = 0, cols_ = 0;
  std::filesystem::path file_;  // empty for an output
  std::string tensor_;
  io::mapped_bytes mapping_;  // inputs
  page_buffer memory_;        // outputs, and inputs that could not be mapped
  void* data_ = nullptr;
  bool writable_ = false;
};

/// The bytes mapped, or read into memory when they are not aligned for the element type (the
/// format allows it).

/// Throws clp::non_finite_input naming the file, tensor, row and column of the first NaN or
/// infinite element of `m` among rows `rows` (in their order), screened in parallel.
void require_finite(const embedding_matrix& m, const std::vector<Index>& rows, int threads = 0);

/// The same over every row of `m`.
void require_finite(const embedding_matrix& m, int threads = 0);

}  // namespace clp_transfer
