// Phase 3 of `clp-transfer transfer`: the new embedding (and every other tensor transferred with
// it: untied head, per-token biases), one row per target token:
// CLP-Transfer's copy and synthesis, or one of the paper's baselines. The library does the
// work; this phase only hands it the matrices, each in its own element type (a view whose type
// is a run-time value), and says where the matrices its errors name came from.
#pragma once

#include <clp/baselines.hpp>
#include <clp/evaluate.hpp>
#include <clp/synthesize.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <variant>
#include <vector>

#include "embedding.hpp"
#include "errors.hpp"
#include "progress.hpp"
#include "transfer/arguments.hpp"
#include "transfer/finite_inputs.hpp"
#include "transfer/read_models.hpp"
#include "transfer/vocabulary_layout.hpp"
#include "library_names.hpp"

namespace clp_transfer {

struct synthesised_embeddings {
  embedding_matrix embedding;  ///< #target rows by the source's width, the source's dtype
  /// One per models.source.transferred, in its order: #target rows by its values per token, its dtype.
  std::vector<embedding_matrix> transferred;
  clp::synthesis_report report;
  /// least-squares only: the map's held-out check (10% of the overlap, seed 0, the embedding).
  std::optional<clp::held_out_scores> held_out;
};

/// Who follows the synthesis through the output rows (weights_output): `started(end)` before
/// any row at or above the previous end is written, `finished(end)` once the rows below `end`
/// are final, both with increasing `end` (clp::synthesis_options::rows_started, rows_finished).
/// The baselines call only `finished`, once, at the end.
struct output_rows_watch {
  std::function<void(Index end)> started, finished;
};

namespace detail {

/// Where each matrix clp::transfer reads came from, by the names its errors give them.
inline error_origins origins_of(const loaded_models& models) {
  error_origins origins;
  origins.add("source", models.source.embedding.origin()).add("helper", models.helper.embedding.origin());
  origins.add("lambda", option_facts("--lambda"));
  for (const transferred_tensor& t : models.source.transferred)
    origins.add(t.entry.name + " source", t.source.origin());
  return origins;
}

/// CLP-Transfer: clp::transfer with the embedding of the source and every tensor transferred
/// with it, each in its own element type; its errors name the files.
inline clp::synthesis_report transfer_rows(const loaded_models& models, const vocabulary_overlap& overlap,
                                      const synthesised_embeddings& out, const transfer_arguments& args,
                                      progress_reporter& progress, const output_rows_watch& watch) {
  clp::synthesis_options options;
  static_cast<clp::execution_options&>(options) = args.execution.options();
  options.progress = [&](Index done, Index total) { progress.update(double(done), double(total)); };
  options.rows_started = watch.started;
  options.rows_finished = watch.finished;
  options.product = make_similarity_product(args.similarity);
  const loaded_model& source = models.source;
  // One call for all pairs: the weights are computed once and applied to each.
  clp::matrix_pairs more;
  for (std::size_t i = 0; i < source.transferred.size(); ++i)
    more.emplace_back(source.transferred[i].entry.name, source.transferred[i].source.view(),
                      out.transferred[i].output_view());
  return origins_of(models).run([&] {
    return clp::synthesize_rows(source.embedding.view(), models.helper.embedding.view(), overlap,
                                out.embedding.output_view(), more, args.weighting.policy, options);
  });
}

/// The baselines: rows drawn from the per-dimension normal of the source matrix they replace;
/// overlap-random keeps the overlapping rows, random draws every row.
inline clp::synthesis_report draw_rows(const loaded_models& models, const vocabulary_overlap& overlap,
                                  const synthesised_embeddings& out, const transfer_arguments& args) {
  const bool keep_overlap = args.method == transfer_method::overlap_random;
  auto draw = [&](const embedding_matrix& from, const embedding_matrix& to) {
    if (keep_overlap)
      clp::overlap_random(from.view(), overlap, to.output_view(), args.seed);
    else
      clp::random_init(from.view(), to.output_view(), args.seed);
  };
  draw(models.source.embedding, out.embedding);
  for (std::size_t i = 0; i < models.source.transferred.size(); ++i)
    draw(models.source.transferred[i].source, out.transferred[i]);
  clp::synthesis_report report;
  report.overlap = overlap.size();
  report.copied_rows = keep_overlap ? overlap.size() : 0;
  report.synthesized_rows = keep_overlap ? Index(overlap.missing_ids.size()) : out.embedding.rows();
  report.padding_rows = Index(overlap.unnamed_ids.size());
  return report;
}

/// A least-squares map's fit on tokens it did not see: 10% of the overlap held out (seed 0),
/// mapped from the rest; nothing for the other weightings, or an overlap too small to split.
inline std::optional<clp::held_out_scores> held_out_check(const loaded_models& models,
                                                          const vocabulary_overlap& overlap,
                                                          const transfer_arguments& args) {
  if (!std::holds_alternative<clp::least_squares_map>(args.weighting.policy) || overlap.size() < 20) return {};
  clp::evaluation_options options;
  static_cast<clp::execution_options&>(options) = args.execution.options();
  try {
    return clp::evaluate(models.source.embedding.view(), models.helper.embedding.view(), overlap, args.weighting.policy,
                         options)
        .scores.front();
  } catch (const clp::invalid_argument&) {
    return {};  // lambda = 0 on kept rows of lower rank than the whole overlap's: no check
  }
}

}  // namespace detail

/// The output matrices for the helper's vocabulary, not yet written: the embedding and one per
/// transferred tensor, each in the source's dtype. Their memory is touched as they are written.
inline synthesised_embeddings allocate_outputs(const loaded_models& models) {
  const loaded_model& source = models.source;
  const Index target_rows = models.helper.embedding.rows();
  return {embedding_matrix(source.embedding.dtype(), target_rows, source.embedding.cols(),
                           "output " + source.embedding_name),
          allocate_transferred_outputs(source.transferred, target_rows),
          {},
          {}};
}

/// Writes `out`'s matrices by args.method, telling `watch` as it goes through their rows: the
/// rows below each `finished` end are final, nothing reads or writes them afterwards.
inline void synthesise(const loaded_models& models, const vocabulary_overlap& overlap,
                       const transfer_arguments& args, progress_reporter& progress, synthesised_embeddings& out,
                       const output_rows_watch& watch) {
  require_finite_elsewhere(models, overlap, args.method, args.execution.threads);
  if (args.method == transfer_method::clp) {
    out.report = detail::transfer_rows(models, overlap, out, args, progress, watch);
    out.held_out = detail::held_out_check(models, overlap, args);
  } else {
    out.report = detail::draw_rows(models, overlap, out, args);
    watch.finished(out.embedding.rows());
  }
}

}  // namespace clp_transfer
