// The output's weight files, from before the synthesis to the end of the write phase: every
// shard of the source written anew into the staging folder as safetensors, same tensor names,
// dtypes, order and shards (a torch checkpoint's shard under its safetensors name,
// io::output_weight_name), with the embedding, its tied copies and the transferred tensors
// replaced by the new matrices (replacement_for).
//
// The new matrices are written out as the synthesis finishes their rows (rows_finished, from
// clp::synthesis_options::rows_finished), by a thread of their own, directly to the disk
// (safetensors_writer's direct I/O). The memory pages of each written stretch are then moved to
// rows the synthesis has not started yet (rows_started, from synthesis_options::rows_started),
// so the rows it makes next land in memory this process already has, neither faulted in nor
// zeroed; the output is never all in memory, nor in the page cache.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "io/embedding_matrix.hpp"
#include "io/safetensors.hpp"
#include "library_names.hpp"
#include "progress.hpp"
#include "transfer/read_models.hpp"
#include "transfer/synthesise.hpp"
#include "transfer/vocabulary_layout.hpp"
#include "verify/tensor_values.hpp"

namespace clp_transfer {

namespace detail {

/// A tensor of an output file that a new matrix fills.
struct destination {
  io::safetensors_writer* writer;
  std::size_t tensor;  ///< its position in the writer's file
  std::string name;
};

/// An output matrix, every tensor it is written to (the embedding's tied copies too), and what
/// has become of its memory.
struct matrix_stream {
  embedding_matrix* matrix;
  std::vector<destination> to;
  std::size_t released = 0;    ///< bytes [0, released) moved away or handed back to the kernel
  std::size_t moved_to = 0;    ///< the end of the pages moved ahead so far
  verify::value_scan scanned;  ///< of the rows written so far: what verify would find reading them

  /// Appends rows [from, to) of the matrix's `rows` to every destination, scanning them as verify
  /// scans a tensor's values (the output check then need not read them back), then frees the memory
  /// of the whole 2 MiB pages below `to`: moved ahead to `untouched_end(row_bytes)` (a byte
  /// offset no block has reached; called under the caller's lock while the pages move) and
  /// above, as far as there is room, the rest handed back; all of it after the last row.
  template <class UntouchedEnd>
  void write(Index from, Index to, Index rows, const UntouchedEnd& untouched_end) {
    constexpr std::size_t huge_page = page_buffer::huge_page;
    const std::size_t row_bytes = matrix->byte_size() / static_cast<std::size_t>(rows);
    const auto* bytes = static_cast<const char*>(matrix->bytes());
    const std::size_t begin = static_cast<std::size_t>(from) * row_bytes;
    const std::size_t end = static_cast<std::size_t>(to) * row_bytes;
    scanned.add(verify::scan_rows(matrix->view().type(), bytes + begin, static_cast<std::size_t>(matrix->cols()), from,
                                  to - from));
    for (const destination& d : this->to) d.writer->append_to(d.tensor, bytes + begin, end - begin);
    const std::size_t done = to == rows ? matrix->byte_size() : end / huge_page * huge_page;
    if (done <= released) return;
    std::size_t moved = 0;
    if (to != rows)
      untouched_end(row_bytes, [&](std::size_t untouched) {
        const std::size_t at = std::max(moved_to, (untouched + huge_page - 1) / huge_page * huge_page);
        const std::size_t room = matrix->memory_size() > at ? matrix->memory_size() - at : 0;
        moved = matrix->move_pages(released, std::min(done - released, room), at);
        if (moved > 0) moved_to = at + moved;
      });
    if (done > released + moved) matrix->release_pages(released + moved, done - released - moved);
    released = done;
  }
};

/// The output's shard files and what fills them: a writer per shard of the source, the streams
/// of the new matrices into them, and per shard the tensors kept as they are.
struct output_shards {
  std::vector<std::unique_ptr<io::safetensors_writer>> writers;  ///< one per shard, in order
  std::vector<matrix_stream> streams;
  std::vector<std::vector<const io::tensor_entry*>> copied;
  std::uint64_t new_total_size = 0, copied_bytes = 0;
};

/// Creates every shard file of `source` in `folder` with its header; nothing else is written.
inline output_shards open_output_shards(const std::filesystem::path& folder, bool durable, const loaded_model& source,
                                        synthesised_embeddings& out) {
  // The output matrices are ours; replacement_for hands them out read-only.
  const auto owned = [&](const embedding_matrix* m) -> embedding_matrix& {
    if (m == &out.embedding) return out.embedding;
    return out.transferred[static_cast<std::size_t>(m - out.transferred.data())];
  };
  output_shards shards;
  std::map<const embedding_matrix*, std::size_t> stream_of;
  const io::model_weights& weights = source.checkpoint.weights;
  for (std::size_t s = 0; s < weights.shards().size(); ++s) {
    const io::weight_file& shard = weights.shards()[s];
    shards.copied.emplace_back();
    std::vector<io::tensor_spec> specs;
    std::vector<std::pair<std::size_t, const embedding_matrix*>> replaced;  // (tensor position, matrix)
    for (const io::tensor_entry& t : shard.tensors()) {
      io::tensor_spec spec{t.name, t.dtype, t.shape, t.byte_size};
      if (const auto replacement =
              replacement_for(t.name, source.plan, out.embedding, source.transferred, out.transferred)) {
        spec.shape = replacement->shape;
        spec.byte_size = replacement->values->byte_size();
        replaced.emplace_back(specs.size(), replacement->values);
      } else {
        shards.copied.back().push_back(&t);
        shards.copied_bytes += t.byte_size;
      }
      shards.new_total_size += spec.byte_size;
      specs.push_back(std::move(spec));
    }
    std::vector<std::string> specs_names;
    for (const io::tensor_spec& spec : specs) specs_names.push_back(spec.name);
    shards.writers.push_back(std::make_unique<io::safetensors_writer>(folder / weights.output_name(s), std::move(specs),
                                                                      shard.metadata(), durable));
    for (const auto& [tensor, matrix] : replaced) {
      const auto [at, added] = stream_of.emplace(matrix, shards.streams.size());
      if (added) shards.streams.push_back({&owned(matrix), {}, 0, 0, {}});
      shards.streams[at->second].to.push_back({shards.writers.back().get(), tensor, specs_names[tensor]});
    }
  }
  return shards;
}

/// A thread that writes the streams' rows as the synthesis reports them finished, and moves
/// their pages to rows it has not started.
class row_writer {
 public:
  /// @param[in] streams  outlive this object; `rows` is each matrix's row count
  row_writer(std::vector<matrix_stream>& streams, Index rows) : streams_(streams), rows_(rows) {
    thread_ = std::thread([this] { run(); });
  }
  row_writer(const row_writer&) = delete;
  row_writer& operator=(const row_writer&) = delete;
  /// Stops the thread without waiting for rows not yet written.
  ~row_writer() {
    if (!thread_.joinable()) return;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      abandoned_ = true;
    }
    ready_.notify_all();
    thread_.join();
  }

  /// No row at or above `end` has been written yet, nor will be until the next call.
  void rows_started(Index end) {
    const std::lock_guard<std::mutex> lock(mutex_);
    untouched_from_ = std::max(untouched_from_, end);
  }

  /// Rows [0, end) are final. Never blocks on the disk.
  void rows_finished(Index end) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      finished_ = std::max(finished_, end);
    }
    ready_.notify_all();
  }

  /// Writes what is left of the finished rows and stops; rethrows the thread's error, and
  /// throws if the rows finished are not all of them.
  void finish() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    thread_.join();
    if (failure_) std::rethrow_exception(failure_);
    if (written_ != rows_)
      throw std::logic_error("clp-transfer: the synthesis finished " + std::to_string(written_) + " of " +
                             std::to_string(rows_) + " output rows");
  }

 private:
  void run() {
    try {
      for (;;) {
        Index end = 0;
        {
          std::unique_lock<std::mutex> lock(mutex_);
          ready_.wait(lock, [&] { return abandoned_ || stopping_ || finished_ > written_; });
          if (abandoned_ || finished_ <= written_) return;
          end = finished_;
        }
        // The lock keeps rows_started from letting the synthesis into rows pages move to.
        const auto untouched_end = [&](std::size_t row_bytes, const auto& move) {
          const std::lock_guard<std::mutex> lock(mutex_);
          move(static_cast<std::size_t>(untouched_from_ < 0 ? rows_ : untouched_from_) * row_bytes);
        };
        for (matrix_stream& s : streams_) s.write(written_, end, rows_, untouched_end);
        const std::lock_guard<std::mutex> lock(mutex_);
        written_ = end;
      }
    } catch (...) {
      failure_ = std::current_exception();  // read by finish() after the join
    }
  }

  std::vector<matrix_stream>& streams_;
  const Index rows_;
  std::mutex mutex_;
  std::condition_variable ready_;
  Index finished_ = 0, written_ = 0;  ///< rows reported finished, rows written
  /// Rows from here on have not been written (rows_started); -1 until it is first called, when
  /// any row may have been.
  Index untouched_from_ = -1;
  bool stopping_ = false, abandoned_ = false;
  std::exception_ptr failure_;
  std::thread thread_;
};

}  // namespace detail

/// The weight files of the output, open while the synthesis fills `out`'s matrices.
class weights_output {
 public:
  /// Creates every shard file of `source` in `folder` with its header and starts the writing
  /// thread; no row is written yet.
  /// @param[in] durable  flush each file to disk when it is finished
  /// @param[in] out      the output matrices; they must outlive this object, and the rows
  ///                     reported finished are not readable afterwards (their memory is released)
  weights_output(const std::filesystem::path& folder, bool durable, const loaded_model& source,
                 synthesised_embeddings& out)
      : source_(source),
        shards_(detail::open_output_shards(folder, durable, source, out)),
        rows_(shards_.streams, out.embedding.rows()) {}

  /// No row at or above `end` of any output matrix has been written yet, nor will be until the
  /// next call: the writing thread may move written pages there. Never blocks on the disk.
  void rows_started(Index end) { rows_.rows_started(end); }

  /// Rows [0, end) of every output matrix are final: the writing thread takes them. Cheap,
  /// never blocks on the disk; an error is reported by finish().
  void rows_finished(Index end) { rows_.rows_finished(end); }

  /// Waits for the writing thread (rethrowing its error), copies the source's other tensors
  /// into place, flushes (when durable) and closes every file; returns the new total size of the
  /// tensor data, for a sharded model's index. Unfinished files are deleted when it throws.
  std::uint64_t finish(progress_reporter& progress) {
    rows_.finish();
    std::uint64_t done = 0;
    for (std::size_t s = 0; s < shards_.writers.size(); ++s) {
      const int shard = source_.checkpoint.weights.shards()[s].descriptor();
      for (const io::tensor_entry* t : shards_.copied[s]) {  // in file order: copy_range fills the next one
        io::copy_range(shard, static_cast<off_t>(t->offset), t->byte_size, *shards_.writers[s]);
        done += t->byte_size;
        progress.update(double(done), double(shards_.copied_bytes));
      }
      shards_.writers[s]->finish();
    }
    return shards_.new_total_size;
  }

  /// After finish(): the values of every tensor the new matrices were written to, by name, as
  /// verify's value scan finds them (check_output takes them instead of reading them back).
  verify::value_scans value_scans() const {
    verify::value_scans scans;
    for (const detail::matrix_stream& s : shards_.streams)
      for (const detail::destination& d : s.to) scans[d.name] = s.scanned;
    return scans;
  }

 private:
  const loaded_model& source_;
  detail::output_shards shards_;  ///< before rows_: its thread writes into them
  detail::row_writer rows_;
};

}  // namespace clp_transfer
