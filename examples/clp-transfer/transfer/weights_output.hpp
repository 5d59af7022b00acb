// The output's weight files, from before the synthesis to the end of the write phase: every
// shard of the source written anew into the staging folder as safetensors, same tensor names,
// dtypes, order and shards (a torch checkpoint's shard under its safetensors name,
// io::output_weight_name), with the embedding, its tied copies and the transferred tensors
// replaced by the new matrices (replacement_for).
//
// The new matrices are written out as the synthesis finishes their rows (rows_finished, from
// clp::synthesis_options::rows_finished), by a thread of their own, directly to the disk
// (safetensors_writer's direct I/O). Each written stretch's memory pages are then moved to rows
// the synthesis has not started yet (rows_started, from synthesis_options::rows_started): the
// rows it makes next are written into memory this process already has, neither faulted in
// nor zeroed, and the output is never all in memory, nor in the page cache. Measured at the
// Llama-2 -> Qwen3 shape on a VM (docs/performance.md): making 2.5 GB of fresh memory cost
// more than the write itself, as much as all of the synthesis but its similarity product;
// pages handed back to the kernel instead of moved came back as 1,122 more huge-page faults,
// each zeroed, in a run that has 168 (whose zeroing perf finds in its first seconds: panels, scratch).
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

#include "embedding.hpp"
#include "io/safetensors.hpp"
#include "progress.hpp"
#include "transfer/read_models.hpp"
#include "transfer/synthesise.hpp"
#include "transfer/vocabulary_layout.hpp"

namespace clp::program {

/// The weight files of the output, open while the synthesis fills `out`'s matrices.
class weights_output {
 public:
  /// Creates every shard file of `source` in `folder` with its header; nothing else is written yet.
  /// @param[in] durable  flush each file to disk when it is finished
  /// @param[in] out      the output matrices; they must outlive this object, and the rows
  ///                     reported finished are not readable afterwards (their memory is released)
  weights_output(const std::filesystem::path& folder, bool durable, const loaded_model& source,
                 synthesised_embeddings& out)
      : source_(source), rows_(out.embedding.rows()) {
    // The output matrices are ours; replacement_for hands them out read-only.
    const auto owned = [&](const embedding_matrix* m) -> embedding_matrix& {
      if (m == &out.embedding) return out.embedding;
      return out.transferred[static_cast<std::size_t>(m - out.transferred.data())];
    };
    std::map<const embedding_matrix*, std::size_t> stream_of;
    const io::model_weights& weights = source.checkpoint.weights;
    for (std::size_t s = 0; s < weights.shards().size(); ++s) {
      const io::weight_file& shard = weights.shards()[s];
      copied_.emplace_back();
      std::vector<io::tensor_spec> specs;
      std::vector<std::pair<std::size_t, const embedding_matrix*>> replaced;  // (tensor position, matrix)
      for (const io::tensor_entry& t : shard.tensors()) {
        io::tensor_spec spec{t.name, t.dtype, t.shape, t.byte_size};
        if (const auto replacement = replacement_for(t.name, source.plan, out.embedding, source.transferred,
                                                     out.transferred)) {
          spec.shape = replacement->shape;
          spec.byte_size = replacement->values->byte_size();
          replaced.emplace_back(specs.size(), replacement->values);
        } else {
          copied_.back().push_back(&t);
          copied_bytes_ += t.byte_size;
        }
        new_total_size_ += spec.byte_size;
        specs.push_back(std::move(spec));
      }
      writers_.push_back(std::make_unique<io::safetensors_writer>(folder / weights.output_name(s), std::move(specs),
                                                                  shard.metadata(), durable));
      for (const auto& [tensor, matrix] : replaced) {
        const auto [at, added] = stream_of.emplace(matrix, streams_.size());
        if (added) streams_.push_back({&owned(matrix), {}});
        streams_[at->second].to.push_back({writers_.back().get(), tensor});
      }
    }
    thread_ = std::thread([this] { stream_rows(); });
  }

  weights_output(const weights_output&) = delete;
  weights_output& operator=(const weights_output&) = delete;
  /// Stops the writing thread; unfinished files are deleted (safetensors_writer).
  ~weights_output() {
    if (!thread_.joinable()) return;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      abandoned_ = true;
    }
    ready_.notify_all();
    thread_.join();
  }

  /// No row at or above `end` of any output matrix has been written yet, nor will be until the
  /// next call: the writing thread may move written pages there. Never blocks on the disk.
  void rows_started(Index end) {
    const std::lock_guard<std::mutex> lock(mutex_);
    untouched_from_ = std::max(untouched_from_, end);
  }

  /// Rows [0, end) of every output matrix are final: the writing thread takes them. Cheap,
  /// never blocks on the disk; an error is reported by finish().
  void rows_finished(Index end) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      finished_ = std::max(finished_, end);
    }
    ready_.notify_all();
  }

  /// Waits for the writing thread (rethrowing its error), copies the source's other tensors
  /// into place, flushes (when durable) and closes every file; returns the new total size of the
  /// tensor data, for a sharded model's index.
  std::uint64_t finish(progress_reporter& progress) {
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
    std::uint64_t done = 0;
    for (std::size_t s = 0; s < writers_.size(); ++s) {
      const int shard = source_.checkpoint.weights.shards()[s].descriptor();
      for (const io::tensor_entry* t : copied_[s]) {  // in file order: copy_range fills the next one
        io::copy_range(shard, static_cast<off_t>(t->offset), t->byte_size, *writers_[s]);
        done += t->byte_size;
        progress.update(double(done), double(copied_bytes_));
      }
      writers_[s]->finish();
    }
    return new_total_size_;
  }

 private:
  struct destination {
    io::safetensors_writer* writer;
    std::size_t tensor;  ///< its position in the writer's file
  };
  /// An output matrix and every tensor it is written to (the embedding's tied copies too).
  struct stream {
    embedding_matrix* matrix;
    std::vector<destination> to;
    std::size_t released = 0;  ///< bytes [0, released) moved away or handed back to the kernel
    std::size_t moved_to = 0;  ///< the end of the pages moved ahead so far
  };

  /// The writing thread: rows as they are reported finished, until finish() or abandonment.
  void stream_rows() {
    try {
      for (;;) {
        Index end = 0;
        {
          std::unique_lock<std::mutex> lock(mutex_);
          ready_.wait(lock, [&] { return abandoned_ || stopping_ || finished_ > written_; });
          if (abandoned_ || finished_ <= written_) return;
          end = finished_;
        }
        write_rows(written_, end);
        const std::lock_guard<std::mutex> lock(mutex_);
        written_ = end;
      }
    } catch (...) {
      failure_ = std::current_exception();  // read by finish() after the join
    }
  }

  /// Rows [from, to) of every matrix to every tensor it replaces; then the memory of the whole
  /// 2 MiB pages below `to` is moved ahead (of all of it at the end: handed back).
  void write_rows(Index from, Index to) {
    constexpr std::size_t huge_page = page_buffer::huge_page;
    for (stream& s : streams_) {
      const std::size_t row_bytes = s.matrix->byte_size() / static_cast<std::size_t>(rows_);
      const auto* bytes = static_cast<const char*>(s.matrix->bytes());
      const std::size_t begin = static_cast<std::size_t>(from) * row_bytes;
      const std::size_t end = static_cast<std::size_t>(to) * row_bytes;
      for (const destination& d : s.to) d.writer->append_to(d.tensor, bytes + begin, end - begin);
      const std::size_t done = to == rows_ ? s.matrix->byte_size() : end / huge_page * huge_page;
      if (done <= s.released) continue;
      const std::size_t moved = to == rows_ ? 0 : move_ahead(s, row_bytes, s.released, done - s.released);
      if (done > s.released + moved) s.matrix->release_pages(s.released + moved, done - s.released - moved);
      s.released = done;
    }
  }

  /// Moves the pages of `s`'s bytes [from, from + size) to the rows no block has started, above
  /// those moved there before; returns the bytes moved (fewer when the rows left are fewer).
  /// The lock keeps rows_started from letting the synthesis into those rows meanwhile.
  std::size_t move_ahead(stream& s, std::size_t row_bytes, std::size_t from, std::size_t size) {
    constexpr std::size_t huge_page = page_buffer::huge_page;
    const std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t untouched = static_cast<std::size_t>(untouched_from_ < 0 ? rows_ : untouched_from_) * row_bytes;
    const std::size_t to = std::max(s.moved_to, (untouched + huge_page - 1) / huge_page * huge_page);
    const std::size_t room = s.matrix->memory_size() > to ? s.matrix->memory_size() - to : 0;
    const std::size_t moved = s.matrix->move_pages(from, std::min(size, room), to);
    if (moved > 0) s.moved_to = to + moved;
    return moved;
  }

  const loaded_model& source_;
  Index rows_;  ///< of every output matrix
  std::vector<std::unique_ptr<io::safetensors_writer>> writers_;  ///< one per shard, in order
  std::vector<stream> streams_;
  std::vector<std::vector<const io::tensor_entry*>> copied_;  ///< per shard: its tensors kept as they are
  std::uint64_t new_total_size_ = 0, copied_bytes_ = 0;

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

}  // namespace clp::program
