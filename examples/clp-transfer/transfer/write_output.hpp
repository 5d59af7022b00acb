// Phase 4 of `clp-transfer transfer`: the output model, written into a staging folder beside
// its final name and moved into place only once complete (and the report written).
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/output_folder.hpp"
#include "io/posix_file.hpp"
#include "io/safetensors.hpp"
#include "io/tokenizer_files.hpp"
#include "progress.hpp"
#include "transfer/arguments.hpp"
#include "transfer/read_models.hpp"
#include "transfer/synthesise.hpp"
#include "transfer/vocabulary_layout.hpp"

namespace clp::program {

namespace detail {

/// Appends all of `matrix`, an output nothing reads again, 64 MiB at a time, handing each
/// written part's pages back to the kernel. Every page of the page cache must come from free
/// memory, and on a VM a page the guest has not touched lately can cost a host fault each: at
/// the Llama-2-7B -> Qwen3 shape writing the 2.5 GB output ran at 0.46 GB/s while the output
/// buffer's own, already faulted-in pages stayed allocated until the end.
inline void append_releasing(io::safetensors_writer& writer, embedding_matrix& matrix) {
  constexpr std::size_t part = std::size_t{64} << 20;
  const auto* bytes = static_cast<const char*>(matrix.bytes());
  for (std::size_t done = 0; done < matrix.byte_size();) {
    const std::size_t size = std::min(part, matrix.byte_size() - done);
    writer.append(bytes + done, size);
    matrix.release_pages(done, size);
    done += size;
  }
}

/// Every tensor of the source, same names, dtypes, order and shards, the embedding, its tied
/// copies and the transferred tensors replaced by the new ones (replacement_for); returns the
/// new total size of the tensor data in bytes. Each output matrix's memory is released as it
/// is written for the last time (a tied copy writes the embedding again): `out`'s matrices are
/// not readable afterwards.
inline std::uint64_t write_weights(const std::filesystem::path& folder, bool durable, const loaded_model& source,
                                   synthesised_embeddings& out, progress_reporter& progress) {
  const auto replacement = [&](const io::tensor_entry& t) {
    return replacement_for(t.name, source.plan, out.embedding, source.transferred, out.transferred);
  };
  // The output matrices are ours; replacement_for hands them out read-only.
  const auto owned = [&](const embedding_matrix* m) -> embedding_matrix& {
    if (m == &out.embedding) return out.embedding;
    return out.transferred[static_cast<std::size_t>(m - out.transferred.data())];
  };
  std::map<const embedding_matrix*, const io::tensor_entry*> last_use;
  std::uint64_t total_bytes = 0, written_bytes = 0, new_total_size = 0;
  for (const io::safetensors_file& shard : source.checkpoint.weights.shards())
    for (const io::tensor_entry& t : shard.tensors()) {
      total_bytes += t.byte_size;
      if (const auto replaced = replacement(t)) last_use[replaced->values] = &t;
    }
  for (const io::safetensors_file& shard : source.checkpoint.weights.shards()) {
    std::vector<io::tensor_spec> specs;
    for (const io::tensor_entry& t : shard.tensors()) {
      io::tensor_spec spec{t.name, t.dtype, t.shape, t.byte_size};
      if (const auto replaced = replacement(t)) {
        spec.shape = replaced->shape;
        spec.byte_size = replaced->values->byte_size();
      }
      new_total_size += spec.byte_size;
      specs.push_back(std::move(spec));
    }
    io::safetensors_writer writer(folder / shard.path().filename(), std::move(specs), shard.metadata(), durable);
    for (const io::tensor_entry& t : shard.tensors()) {
      if (const auto replaced = replacement(t)) {
        if (last_use[replaced->values] == &t)
          append_releasing(writer, owned(replaced->values));
        else
          writer.append(replaced->values->bytes(), replaced->values->byte_size());
      } else
        io::copy_range(shard.descriptor(), static_cast<off_t>(t.offset), t.byte_size, writer);
      written_bytes += t.byte_size;
      progress.update(double(written_bytes), double(total_bytes));
    }
    writer.finish();
  }
  return new_total_size;
}

}  // namespace detail

/// Whether the output is flushed to disk before it is moved into place, so that it survives a
/// power loss once committed: asked for with --fsync, and always when --force replaces an
/// output (the old one is deleted only after the new one is on disk). Otherwise the kernel
/// writes it back in its own time, as after cp; the rename still means no reader ever sees a
/// half-written output.
inline bool durable_output(const transfer_arguments& args) {
  std::error_code ignored;
  return args.fsync || std::filesystem::exists(args.output, ignored);
}

/// Writes the output model into `staging`: the weights, the index of a sharded model with its
/// new total size, config.json and generation_config.json for the new vocabulary (read_models
/// decided them), and the helper's tokenizer files, copied as they are. `out`'s matrices are
/// released as they are written (only its report stays readable).
inline void write_output(const io::staging_directory& staging, bool durable, const transfer_arguments& args,
                         const loaded_models& models, synthesised_embeddings& out, progress_reporter& progress) {
  const io::model_weights& weights = models.source.checkpoint.weights;
  const std::uint64_t new_total_size = detail::write_weights(staging.path(), durable, models.source, out, progress);
  if (!weights.index_path().empty()) {
    nlohmann::ordered_json index = weights.index();
    if (index.contains("metadata") && index["metadata"].is_object()) index["metadata"]["total_size"] = new_total_size;
    io::write_file_atomically(staging.path() / weights.index_path().filename(), index.dump(2) + "\n", durable);
  }
  io::write_file_atomically(staging.path() / "config.json", models.config.config.dump(2) + "\n", durable);
  if (models.generation_config)
    io::write_file_atomically(staging.path() / "generation_config.json", models.generation_config->dump(2) + "\n",
                              durable);
  for (const std::filesystem::path& file : io::tokenizer_files(args.helper)) {
    std::error_code error;
    if (!std::filesystem::copy_file(file, staging.path() / file.filename(), error))
      throw clp::io_error(io::about(file), "cannot copy into the output: " + error.message());
    if (durable) io::flush_to_disk(staging.path() / file.filename());
  }
  if (durable) io::flush_to_disk(staging.path());
}

/// Moves the output into place (replacing an old one with --force), then the report written
/// beside its final name; removes that report when the output cannot be moved.
inline void commit_output(io::staging_directory& staging, bool durable, const transfer_arguments& args,
                          const std::filesystem::path& partial_report) {
  try {
    staging.commit(args.force);
  } catch (...) {
    std::error_code ignored;
    if (!partial_report.empty()) std::filesystem::remove(partial_report, ignored);
    throw;
  }
  // The rename itself: best effort, since the output is already in place and complete.
  if (durable) io::try_flush_to_disk(io::parent_directory(io::without_trailing_separator(args.output)));
  if (!partial_report.empty() && std::rename(partial_report.c_str(), args.report.c_str()) != 0)
    io::failed(args.report, "cannot move the report into place");
}

}  // namespace clp::program
