// The new embedding (and every other tensor transferred with it: untied head, per-token biases),
// one row per target row of an overlap: CLP-Transfer's copy and synthesis, or one of the paper's
// baselines, as a synthesis_choice says. The library does the work; this phase only hands it
// the matrices, each in its own element type (a view whose type is a run-time value), and says
// where the matrices its errors name came from.
#pragma once

#include <clp/baselines.hpp>
#include <clp/evaluate.hpp>
#include <clp/overlap_cache.hpp>
#include <clp/synthesize.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "errors.hpp"
#include "io/embedding_matrix.hpp"
#include "library_names.hpp"
#include "progress.hpp"
#include "transfer/finite_inputs.hpp"
#include "transfer/read_models.hpp"
#include "transfer/synthesis_choice.hpp"
#include "transfer/vocabulary_layout.hpp"

namespace clp_transfer {

/// The output matrices of a synthesis, and what it reports.
struct synthesised_embeddings {
  embedding_matrix embedding;  ///< #target rows by the source's width, the source's dtype
  /// One per transferred tensor of the source (loaded_model::transferred), in its order:
  /// #target rows by its values per token, its dtype.
  std::vector<embedding_matrix> transferred;
  clp::synthesis_report report;
  /// least-squares only: the map's held-out check (10% of the overlap, seed 0, the embedding).
  std::optional<clp::held_out_scores> held_out;
  double held_out_seconds = 0;  ///< wall seconds of the held-out check
};

/// Who follows the synthesis through the output rows (weights_output): `started(end)` before
/// any row at or above the previous end is written, `finished(end)` once the rows below `end`
/// are final, both with increasing `end` (clp::synthesis_options::rows_started, rows_finished).
/// The baselines call only `finished`, once, at the end.
struct output_rows_watch {
  std::function<void(Index end)> started, finished;
};

namespace detail {

/// Where each matrix clp::synthesize_rows reads came from, by the names its errors give them; an
/// error about none of them is about the two embedding files.
inline error_origins origins_of(const loaded_model& source, const embedding_matrix& helper) {
  error_origins origins;
  origins.add("source", source.embedding.origin()).add("helper", helper.origin());
  origins.add("lambda", option_facts("--lambda"));
  origins.otherwise(source.embedding.origin().file + " and " + helper.origin().file);
  for (const transferred_tensor& t : source.transferred) origins.add(t.entry.name + " source", t.source.origin());
  return origins;
}

/// CLP-Transfer: clp::synthesize_rows with the embedding of the source and every tensor transferred
/// with it, each in its own element type; its errors name the files.
inline clp::synthesis_report transfer_rows(const loaded_model& source, const embedding_matrix& helper,
                                           const vocabulary_overlap& overlap, const synthesised_embeddings& out,
                                           const synthesis_choice& choice, progress_reporter& progress,
                                           const output_rows_watch& watch, std::shared_ptr<clp::overlap_cache> cache,
                                           std::shared_ptr<const clp::similarity_product> product) {
  clp::synthesis_options options;
  static_cast<clp::execution_options&>(options) = choice.execution.options();
  options.cache = std::move(cache);
  options.progress = [&](Index done, Index total) { progress.update(double(done), double(total)); };
  options.rows_started = watch.started;
  options.rows_finished = watch.finished;
  options.product = std::move(product);
  // One call for all pairs: the weights are computed once and applied to each.
  clp::matrix_pairs more;
  for (std::size_t i = 0; i < source.transferred.size(); ++i)
    more.emplace_back(source.transferred[i].entry.name, source.transferred[i].source.view(),
                      out.transferred[i].output_view());
  return origins_of(source, helper).run([&] {
    return clp::synthesize_rows(source.embedding.view(), helper.view(), overlap, out.embedding.output_view(), more,
                                choice.weighting.policy, options);
  });
}

/// The baselines: rows drawn from the per-dimension normal of the source matrix they replace;
/// overlap-random keeps the overlapping rows, random draws every row.
inline clp::synthesis_report draw_rows(const loaded_model& source, const vocabulary_overlap& overlap,
                                       const synthesised_embeddings& out, const synthesis_choice& choice) {
  const bool keep_overlap = choice.method == transfer_method::overlap_random;
  auto draw = [&](const embedding_matrix& from, const embedding_matrix& to) {
    error_origins().add("source", from.origin()).otherwise(from.origin().file).run([&] {
      if (keep_overlap)
        clp::overlap_random(from.view(), overlap, to.output_view(), choice.seed);
      else
        clp::random_init(from.view(), to.output_view(), choice.seed);
    });
  };
  draw(source.embedding, out.embedding);
  for (std::size_t i = 0; i < source.transferred.size(); ++i) draw(source.transferred[i].source, out.transferred[i]);
  clp::synthesis_report report;
  report.overlap = overlap.size();
  report.copied_rows = keep_overlap ? overlap.size() : 0;
  report.synthesized_rows = keep_overlap ? Index(overlap.missing_ids.size()) : out.embedding.rows();
  report.padding_rows = Index(overlap.unnamed_ids.size());
  return report;
}

/// A least-squares map's fit on tokens it did not see: 10% of the overlap held out (seed 0),
/// mapped from the rest with the transfer's moments and similarity product; nothing for the other
/// weightings, or an overlap too small to split.
inline std::optional<clp::held_out_scores> held_out_check(const loaded_model& source, const embedding_matrix& helper,
                                                          const vocabulary_overlap& overlap,
                                                          const synthesis_choice& choice,
                                                          std::shared_ptr<clp::overlap_cache> cache,
                                                          std::shared_ptr<const clp::similarity_product> product) {
  if (!std::holds_alternative<clp::least_squares_map>(choice.weighting.policy) || overlap.size() < 20) return {};
  clp::evaluation_options options;
  static_cast<clp::execution_options&>(options) = choice.execution.options();
  options.cache = std::move(cache);
  options.product = std::move(product);
  try {
    return clp::evaluate(source.embedding.view(), helper.view(), overlap, choice.weighting.policy, options)
        .scores.front();
  } catch (const clp::invalid_argument&) {
    return {};  // lambda = 0 on kept rows of lower rank than the whole overlap's: no check
  }
}

}  // namespace detail

/// The output matrices, not yet written: the embedding and one per transferred tensor of
/// `source`, each #target_rows by its width, in the source's dtype. Their memory is touched as
/// they are written.
inline synthesised_embeddings allocate_outputs(const loaded_model& source, Index target_rows) {
  return {embedding_matrix(source.embedding.dtype(), target_rows, source.embedding.cols(),
                           "output " + source.embedding_name),
          allocate_transferred_outputs(source.transferred, target_rows),
          {},
          {}};
}

/// Writes `out`'s matrices by choice.method, telling `watch` as it goes through their rows: the
/// rows below each `finished` end are final, nothing reads or writes them afterwards.
/// @param[in]  source   the source's embedding and transferred tensors, each #source rows
/// @param[in]  helper   the helper's embedding, #overlap.target_rows() by the helper's width
/// @param[in]  overlap  which output rows copy which source row; the rest are made by the method
/// @param[out] out      allocate_outputs(source, overlap.target_rows())
inline void synthesise(const loaded_model& source, const embedding_matrix& helper, const vocabulary_overlap& overlap,
                       const synthesis_choice& choice, progress_reporter& progress, synthesised_embeddings& out,
                       const output_rows_watch& watch) {
  require_finite_elsewhere(source, helper, overlap, choice.method, choice.execution.threads);
  if (choice.method == transfer_method::clp) {
    // The map's moments over the overlap, summed once (the held-out check's are the same less
    // the rows it holds out),
    // and its similarity product, made ready once (a bf16 product's kernels are built for it).
    const auto cache = std::make_shared<clp::overlap_cache>();
    const std::shared_ptr<const clp::similarity_product> product = make_similarity_product(choice.similarity);
    out.report = detail::transfer_rows(source, helper, overlap, out, choice, progress, watch, cache, product);
    const auto checking = std::chrono::steady_clock::now();
    out.held_out = detail::held_out_check(source, helper, overlap, choice, cache, product);
    out.held_out_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - checking).count();
  } else {
    out.report = detail::draw_rows(source, overlap, out, choice);
    watch.finished(out.embedding.rows());
  }
}

}  // namespace clp_transfer
