// `clp-transfer transfer`: a Hugging Face source model and a helper model in, the source model
// with the helper's vocabulary out (CLP-Transfer, or one of the paper's baselines).
#pragma once

#include <clp/clp.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "embedding.hpp"
#include "io/hf_model.hpp"
#include "io/safetensors.hpp"
#include "progress.hpp"

namespace clp::program {

/// The weighting the program uses unless told otherwise; README "Choosing the weighting" has
/// the measurement behind it.
inline constexpr const char* default_weighting = "top-k";

struct transfer_arguments {
  std::filesystem::path source, helper, output, report;
  int threads = 0;
  double tile_mb = 256;
  std::string embedding_tensor, helper_embedding_tensor, lm_head_tensor;
  bool force = false, quiet = false;
  bool fsync = false;  // flush the output to disk before the rename
  std::string method = "clp";  // clp | overlap-random | random
  std::string weighting = default_weighting;
  Index k = 10;
  float temperature = 0.1f;
  std::uint64_t seed = 0;
};

namespace detail {

inline std::filesystem::path vocabulary_file(const std::filesystem::path& folder) {
  return std::filesystem::exists(folder / "tokenizer.json") ? folder / "tokenizer.json" : folder / "vocab.json";
}

/// Every token id must name a row of each matrix it indexes.
inline void require_ids_fit(const io::token_vocabulary& vocabulary, const std::filesystem::path& folder,
                            const embedding_matrix& matrix) {
  for (const auto& [token, id] : vocabulary.ids)
    if (id >= matrix.rows())
      io::detail::fail(vocabulary_file(folder), "token " + io::detail::quoted_name(token) + " has id " +
                                                    std::to_string(id) + ", past the " + std::to_string(matrix.rows()) +
                                                    " rows of " + matrix.description());
}

inline void require_hidden_size(const io::model_folder& folder, const embedding_matrix& matrix) {
  const std::filesystem::path config = folder.directory() / "config.json";
  const std::int64_t hidden = io::config_hidden_size(folder.config(), config);
  if (hidden != matrix.cols())
    io::detail::fail(config, "hidden size " + std::to_string(hidden) + " does not fit " + matrix.description() +
                                 " with " + std::to_string(matrix.cols()) + " columns");
}

/// out(target_ids[i], :) = source(source_ids[i], :), same element type.
template <class T>
void copy_overlap_rows(clp::matrix_view<const T> source, clp::matrix_view<T> out, const vocabulary_overlap& overlap) {
  for (Index i = 0; i < overlap.size(); ++i)
    for (Index c = 0; c < source.cols(); ++c) out(overlap.target_ids[i], c) = source(overlap.source_ids[i], c);
}

/// Flushes file or directory `path` to disk (fsync); false, with errno set, when that failed.
inline bool try_flush_to_disk(const std::filesystem::path& path) noexcept {
  const io::detail::file_descriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  return fd.get() >= 0 && ::fsync(fd.get()) == 0;
}

/// Flushes file or directory `path` to disk; throws naming it on failure.
inline void flush_to_disk(const std::filesystem::path& path) {
  if (!try_flush_to_disk(path)) io::detail::fail(path, io::detail::with_errno("cannot flush to disk"));
}

/// Writes text to `path` through a temporary file in the same folder and a rename, so a
/// reader never sees half a file; with `durable`, the file is flushed to disk before the rename.
inline void write_file_atomically(const std::filesystem::path& path, const std::string& text, bool durable = false) {
  const std::filesystem::path temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      io::detail::fail(path, "cannot write");
    }
  }
  if (durable) flush_to_disk(temporary);
  std::filesystem::rename(temporary, path);
}

}  // namespace detail

/// Runs the transfer; throws on any error, leaving no output behind.
inline void run_transfer(const transfer_arguments& args) {
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  progress_reporter progress(args.quiet);

  // Refuse before any work: a long run must not end in "already exists".
  io::check_output_available(args.output, args.force);
  if (!args.report.empty()) {
    if (std::filesystem::exists(args.report) && !args.force)
      io::detail::fail(args.report, "already exists (use --force to replace it)");
    const auto parent = args.report.has_parent_path() ? args.report.parent_path() : std::filesystem::path(".");
    if (!std::filesystem::is_directory(parent))
      io::detail::fail(args.report, "parent directory " + parent.string() + " does not exist");
  }
  if (args.method != "clp" && args.method != "overlap-random" && args.method != "random")
    throw std::runtime_error("--method must be clp, overlap-random or random, not '" + args.method + "'");
  if (args.threads < 0)
    throw std::runtime_error("--threads must be 0 (all cores) or more, not " + std::to_string(args.threads));
  if (!(args.tile_mb > 0) || !(args.tile_mb <= 1 << 20))
    throw std::runtime_error("--tile-mb must be positive and at most 1048576 (1 TiB)");
  for (const auto& input : {args.source, args.helper}) {
    std::error_code ignored;
    if (std::filesystem::equivalent(io::detail::without_trailing_separator(args.output), input, ignored))
      io::detail::fail(args.output, "is the input model " + input.string() + "; refusing to replace it");
  }
  const clp::weighting weighting = clp::make_weighting(args.weighting, args.k, args.temperature);

  // --- read
  progress.begin("read");
  const io::model_folder source(args.source);
  const io::model_folder helper(args.helper);
  // The reads run at once: the two vocabularies (JSON parsing) and their intersection, with the
  // embedding row counts from the tensor headers, on one side; the two embeddings (a mapping
  // plus a NaN screen each) on the other. Errors are still reported in the order of the checks
  // below, whichever read finished first: vocabularies, embeddings, then the intersection.
  auto reading_source_vocabulary =
      std::async(std::launch::async, [&] { return io::read_vocabulary(args.source); }).share();
  auto reading_helper_vocabulary =
      std::async(std::launch::async, [&] { return io::read_vocabulary(args.helper); }).share();
  std::string embedding_name, helper_embedding_name;
  std::optional<std::string> head_name;
  std::optional<embedding_matrix> read_source_embedding, read_helper_embedding, source_head;
  std::future<vocabulary_overlap> intersecting;
  std::exception_ptr embedding_error;
  try {
    const std::vector<std::string> source_names = source.tensor_names();
    embedding_name = io::find_input_embedding(args.source, source_names, args.embedding_tensor);
    head_name = io::find_output_embedding(args.source, source_names, args.lm_head_tensor);
    helper_embedding_name = io::find_input_embedding(args.helper, helper.tensor_names(), args.helper_embedding_tensor);
    const auto rows_in_header = [](const io::model_folder& folder, const std::string& name) -> Index {
      const io::tensor_entry& tensor = folder.locate(name).tensor;
      return tensor.shape.size() == 2 ? tensor.shape[0] : -1;
    };
    const Index source_rows = rows_in_header(source, embedding_name);
    const Index helper_rows = rows_in_header(helper, helper_embedding_name);
    if (source_rows >= 0 && helper_rows >= 0)
      intersecting = std::async(std::launch::async, [=] {
        return clp::intersect_vocabularies(reading_source_vocabulary.get().ids, reading_helper_vocabulary.get().ids,
                                           {source_rows, helper_rows, {}});
      });
    auto reading_helper =
        std::async(std::launch::async, [&] { return embedding_matrix::read(helper, helper_embedding_name); });
    read_source_embedding.emplace(embedding_matrix::read(source, embedding_name));
    read_helper_embedding.emplace(reading_helper.get());
    if (head_name) source_head.emplace(embedding_matrix::read(source, *head_name));
  } catch (...) {
    embedding_error = std::current_exception();
  }
  const io::token_vocabulary& source_vocabulary = reading_source_vocabulary.get();
  const io::token_vocabulary& helper_vocabulary = reading_helper_vocabulary.get();
  if (embedding_error) std::rethrow_exception(embedding_error);
  const embedding_matrix& source_embedding = *read_source_embedding;
  const embedding_matrix& helper_embedding = *read_helper_embedding;

  detail::require_hidden_size(source, source_embedding);
  detail::require_hidden_size(helper, helper_embedding);
  detail::require_ids_fit(source_vocabulary, args.source, source_embedding);
  detail::require_ids_fit(helper_vocabulary, args.helper, helper_embedding);
  if (source_head) {
    detail::require_ids_fit(source_vocabulary, args.source, *source_head);
    if (source_head->dtype() != source_embedding.dtype())
      io::detail::fail(source.directory(), "the output head is " + source_head->dtype() + " but the embedding is " +
                                               source_embedding.dtype() + "; mixed dtypes are not supported");
  }

  vocabulary_overlap overlap;
  try {
    // Started above with the row counts from the headers, which the reads have since checked
    // to be these matrices' rows: both are 2-D, so the task exists.
    overlap = intersecting.get();
  } catch (const clp::error& e) {
    throw std::runtime_error(detail::vocabulary_file(args.source).string() + " and " +
                             detail::vocabulary_file(args.helper).string() + ": " + e.what());
  }
  const double read_seconds = progress.end();

  // --- synthesize
  progress.begin("synthesize");
  const Index target_rows = helper_embedding.rows();
  embedding_matrix output_embedding(source_embedding.dtype(), target_rows, source_embedding.cols(),
                                    "output " + embedding_name);
  std::optional<embedding_matrix> output_head;
  if (source_head) output_head.emplace(source_head->dtype(), target_rows, source_head->cols(), "output " + *head_name);

  synthesis_options options;
  options.threads = args.threads;
  options.tile_bytes = static_cast<std::size_t>(args.tile_mb * double(1 << 20));
  options.progress = [&](Index done, Index total) { progress.update(double(done), double(total)); };

  synthesis_report report;
  report.overlap = overlap.size();
  source_embedding.visit([&](auto source_view) {
    using T = typename decltype(source_view)::value_type;
    auto typed = [](embedding_matrix& m) {
      return m.visit([](auto v) -> clp::matrix_view<T> {
        if constexpr (std::is_same_v<typename decltype(v)::value_type, T>)
          return v;
        else
          throw std::logic_error("output dtype differs from source dtype");
      });
    };
    const auto out = typed(output_embedding);
    if (args.method == "clp") {
      helper_embedding.visit([&](auto helper_view) {
        if (source_head) {
          const auto head = std::as_const(*source_head).visit([](auto v) -> clp::matrix_view<const T> {
            if constexpr (std::is_same_v<typename decltype(v)::value_type, T>)
              return v;
            else
              throw std::logic_error("head dtype differs from source dtype");
          });
          report = clp::transfer(source_view, head, helper_view, overlap, out, typed(*output_head), weighting, options);
        } else {
          report = clp::transfer(source_view, helper_view, overlap, out, weighting, options);
        }
      });
      return;
    }
    // The baselines: rows drawn from the source's per-dimension normal; overlap-random keeps
    // the overlapping rows (transfer without a helper model), random draws every row.
    const std::vector<Index> drawn =
        args.method == "random" ? [&] {
          std::vector<Index> all(static_cast<std::size_t>(target_rows));
          for (Index r = 0; r < target_rows; ++r) all[r] = r;
          return all;
        }()
                                : overlap.missing_ids;
    auto fill = [&](const embedding_matrix& from, embedding_matrix& to) {
      from.visit([&](auto from_view) {
        using U = typename decltype(from_view)::value_type;
        to.visit([&](auto to_view) {
          if constexpr (std::is_same_v<typename decltype(to_view)::value_type, U>) {
            if (args.method == "overlap-random") detail::copy_overlap_rows<U>(from_view, to_view, overlap);
            clp::random_rows(clp::column_statistics_of(from_view), to_view, drawn, args.seed);
          }
        });
      });
    };
    fill(source_embedding, output_embedding);
    if (source_head) fill(*source_head, *output_head);
    report.copied_rows = args.method == "random" ? 0 : overlap.size();
    report.synthesized_rows = Index(drawn.size());
  });
  const double synthesize_seconds = progress.end();

  // --- write: every tensor of the source, same names, dtypes, order and shards
  progress.begin("write");
  // Durable: every file is flushed to disk before the staging folder is renamed into place,
  // and the folders after, so the output survives a power loss once committed. Asked for with
  // --fsync, and always when --force replaces an output: the old one is deleted only after the
  // new one is on disk. Otherwise the kernel writes it back in its own time, as after cp; the
  // rename still means no reader ever sees a half-written output.
  std::error_code ignored_error;
  const bool durable = args.fsync || std::filesystem::exists(args.output, ignored_error);
  io::staging_directory staging(args.output);
  std::uint64_t total_bytes = 0, written_bytes = 0;
  for (const io::safetensors_file& shard : source.shards())
    for (const io::tensor_entry& t : shard.tensors()) total_bytes += t.byte_size;
  std::uint64_t new_total_size = 0;
  for (const io::safetensors_file& shard : source.shards()) {
    std::vector<io::tensor_spec> specs;
    for (const io::tensor_entry& t : shard.tensors()) {
      io::tensor_spec spec{t.name, t.dtype, t.shape, t.byte_size};
      if (t.name == embedding_name || (head_name && t.name == *head_name)) {
        const embedding_matrix& replaced = t.name == embedding_name ? output_embedding : *output_head;
        spec.shape = {replaced.rows(), replaced.cols()};
        spec.byte_size = replaced.byte_size();
      }
      new_total_size += spec.byte_size;
      specs.push_back(std::move(spec));
    }
    io::safetensors_writer writer(staging.path() / shard.path().filename(), std::move(specs), shard.metadata(),
                                  durable);
    for (const io::tensor_entry& t : shard.tensors()) {
      if (t.name == embedding_name)
        writer.append(output_embedding.bytes(), output_embedding.byte_size());
      else if (head_name && t.name == *head_name)
        writer.append(output_head->bytes(), output_head->byte_size());
      else
        io::copy_range(shard.descriptor(), static_cast<off_t>(t.offset), t.byte_size, writer);
      written_bytes += t.byte_size;
      progress.update(double(written_bytes), double(total_bytes));
    }
    writer.finish();
  }
  if (!source.index_path().empty()) {
    std::ifstream in(source.index_path());
    nlohmann::ordered_json index = nlohmann::ordered_json::parse(in);
    if (index.contains("metadata") && index["metadata"].is_object()) index["metadata"]["total_size"] = new_total_size;
    detail::write_file_atomically(staging.path() / source.index_path().filename(), index.dump(2) + "\n", durable);
  }
  const auto config = io::target_config(source.config(), helper.config(), target_rows);
  detail::write_file_atomically(staging.path() / "config.json", config.dump(2) + "\n", durable);
  for (const std::filesystem::path& file : io::tokenizer_files(args.helper)) {
    std::filesystem::copy_file(file, staging.path() / file.filename());
    if (durable) detail::flush_to_disk(staging.path() / file.filename());
  }
  if (durable) detail::flush_to_disk(staging.path());
  const double write_seconds = progress.end();
  const double total_seconds = std::chrono::duration<double>(clock::now() - started).count();

  // --- report
  const Index missing = overlap.target_rows() - overlap.size();
  const bool out_of_proportion =
      report.median_source_row_norm > 0 && report.max_output_row_norm > 4 * report.median_source_row_norm;
  if (!args.report.empty()) {
    nlohmann::ordered_json json;
    json["source"] = args.source.string();
    json["helper"] = args.helper.string();
    json["output"] = args.output.string();
    json["method"] = args.method;
    json["weighting"] = {{"name", args.weighting}, {"k", args.k}, {"temperature", args.temperature}};
    json["source_vocab_size"] = overlap.source_vocab_size;
    json["target_vocab_size"] = overlap.target_vocab_size;
    json["target_rows"] = target_rows;
    json["overlap"] = overlap.size();
    json["overlap_share_of_source"] = overlap.share_of_source();
    json["overlap_share_of_target"] = overlap.share_of_target();
    json["missing"] = missing;
    json["degenerate_rows"] = report.degenerate_rows();
    json["zero_norm_rows"] = report.zero_norm_rows;
    json["fallback_rows"] = report.fallback_rows;
    json["no_positive_cosine_rows"] = report.no_positive_rows;
    json["inflated_rows"] = report.inflated_rows;
    json["effective_neighbours"] = {{"min", report.effective_neighbours_min},
                                    {"median", report.effective_neighbours_median},
                                    {"max", report.effective_neighbours_max}};
    json["max_output_row_norm"] = report.max_output_row_norm;
    json["median_output_row_norm"] = report.median_output_row_norm;
    json["median_source_row_norm"] = report.median_source_row_norm;
    json["seconds"] = {
        {"read", read_seconds}, {"synthesize", synthesize_seconds}, {"write", write_seconds}, {"total", total_seconds}};
    // Written beside its final name first, and renamed only once the output is in place.
    detail::write_file_atomically(args.report.string() + ".partial", json.dump(2) + "\n");
  }
  try {
    staging.commit(args.force);
  } catch (...) {
    std::error_code ignored;
    if (!args.report.empty()) std::filesystem::remove(args.report.string() + ".partial", ignored);
    throw;
  }
  // The rename itself: best effort, since the output is already in place and complete.
  if (durable)
    detail::try_flush_to_disk(io::detail::parent_directory(io::detail::without_trailing_separator(args.output)));
  if (!args.report.empty()) std::filesystem::rename(args.report.string() + ".partial", args.report);
  if (args.quiet) return;
  std::fprintf(stderr,
               "clp-transfer: wrote %s\n"
               "  source vocabulary  %td tokens (%s: %td x %td %s)\n"
               "  target vocabulary  %td tokens (%s: %td x %td)\n"
               "  overlap            %td tokens = %.1f%% of source, %.1f%% of target\n"
               "  missing            %td rows, %s\n",
               args.output.c_str(), overlap.source_vocab_size, embedding_name.c_str(), source_embedding.rows(),
               source_embedding.cols(), source_embedding.dtype().c_str(), overlap.target_vocab_size,
               helper_embedding_name.c_str(), helper_embedding.rows(), helper_embedding.cols(), overlap.size(),
               100 * overlap.share_of_source(), 100 * overlap.share_of_target(), missing,
               args.method == "clp" ? ("synthesised (weighting " + args.weighting + ")").c_str()
                                    : ("drawn at random (method " + args.method + ")").c_str());
  if (args.method == "clp")
    std::fprintf(stderr,
                 "  fallback rows      %td (zero-norm helper rows %td, no usable weights %td)\n"
                 "  no positive cosine %td rows; inflated %td rows\n"
                 "  neighbours         effective 1/sum(w^2): min %.1f, median %.1f, max %.1f\n"
                 "  row norms          largest synthesised %.3g, median source %.3g\n",
                 report.degenerate_rows(), report.zero_norm_rows, report.fallback_rows, report.no_positive_rows,
                 report.inflated_rows, report.effective_neighbours_min, report.effective_neighbours_median,
                 report.effective_neighbours_max, report.max_output_row_norm, report.median_source_row_norm);
  std::fprintf(stderr, "  seconds            read %.2f, synthesize %.2f, write %.2f, total %.2f\n", read_seconds,
               synthesize_seconds, write_seconds, total_seconds);
  if (args.method == "clp" && out_of_proportion)
    std::fprintf(stderr,
                 "clp-transfer: warning: the largest synthesised row norm (%.3g) is more than 4x the median source "
                 "row norm (%.3g); try --weighting clamped, top-k or sparsemax\n",
                 report.max_output_row_norm, report.median_source_row_norm);
}

}  // namespace clp::program
