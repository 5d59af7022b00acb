// `clp-transfer extend`: the source model with its tokenizer extended by tokens it lacks (the
// helper's, or a list), every source token, id and row kept, and only the new rows made (by the
// engine from the helper, as `transfer` makes them, or as the mean of their pieces; new_rows.hpp).
// The phases are transfer's (read_models, the under-trained screen, synthesise, weights_output,
// write_output, commit_output) with the tokenizer side of extend/ between reading and synthesis.
#pragma once

#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "extend/drift.hpp"
#include "extend/extend_report.hpp"
#include "extend/extended_config.hpp"
#include "extend/extension.hpp"
#include "extend/id_order.hpp"
#include "extend/new_rows.hpp"
#include "extend/read_source_model.hpp"
#include "extend/source_tokenizer.hpp"
#include "extend/token_request.hpp"
#include "extend/unigram_model.hpp"
#include "extend/wordpiece_model.hpp"
#include "io/output_folder.hpp"
#include "io/system/interruption.hpp"
#include "library_names.hpp"
#include "progress.hpp"
#include "transfer/output_check.hpp"
#include "transfer/output_target.hpp"
#include "transfer/output_vocabulary.hpp"
#include "transfer/read_models.hpp"
#include "transfer/synthesis_choice.hpp"
#include "transfer/synthesise.hpp"
#include "transfer/undertrained.hpp"
#include "transfer/weights_output.hpp"
#include "transfer/write_output.hpp"

namespace clp_transfer {

/// The models an extension reads: the pair, or the source alone.
struct extend_models {
  std::optional<loaded_models> pair;  ///< with a helper
  std::optional<loaded_model> alone;  ///< without one

  const loaded_model& source() const { return pair ? pair->source : *alone; }
  const token_matching* matching() const { return pair ? &pair->matching : nullptr; }
};

/// The tokenizer side of an extension, once the models are read.
struct extend_tokenizer {
  chosen_tokens chosen;
  extend::bpe_extension extension;
  /// The pieces a SentencePiece model of the source gets (extend/sentencepiece_bpe.hpp,
  /// extend/unigram_model.hpp); empty without one.
  std::vector<io::sentencepiece_piece> appended;
  /// A Unigram source's extended encoder (extension.table holds its pieces, not its encoding).
  std::optional<extend::unigram_table> unigram;
  /// A WordPiece source's extended encoder (extension.table holds its pieces, not its encoding).
  std::optional<extend::wordpiece_table> wordpiece;
  new_rows_plan rows;
};

namespace detail {

/// The screen for under-trained source rows under `mode`: with a helper over the source rows of
/// transfer's overlap, as transfer screens them (so that the engine's rows stay transfer's);
/// without one over every row a source token names, the rows the means of pieces read.
inline undertrained_screen screen_extend_source(const extend_models& models, undertrained_mode mode, int threads) {
  if (models.pair) return screen_undertrained(models.pair->source, models.pair->matching.overlap, mode, threads);
  const loaded_model& source = *models.alone;
  vocabulary_overlap named;
  for (const auto& [token, id] : source.checkpoint.tokenizer.vocabulary.ids)
    if (id < source.embedding.rows()) named.source_ids.push_back(id);
  return screen_undertrained(source, named, mode, threads);
}

/// Chooses the tokens, extends the source's BPE model, gives the new ids out in the helper's
/// order (id_order.hpp) and plans every new row, the rows `screen` leaves out supporting none;
/// refuses an extension that would add nothing, naming the source's tokenizer.
inline extend_tokenizer extend_source_tokenizer(const extend_request& request, const request_texts& texts,
                                                const source_tokenizer& tokenizer, const extend_models& models,
                                                const undertrained_screen& screen) {
  chosen_tokens chosen =
      choose_new_tokens(request, texts, tokenizer, models.pair ? &models.pair->helper.checkpoint : nullptr);
  extend::extension_options options;
  if (request.drift_budget) {
    for (const std::string_view word : extend::probe_words(texts.probe)) options.drift_probe.emplace_back(word);
    options.max_changed_words =
        static_cast<std::size_t>(std::floor(*request.drift_budget * double(options.drift_probe.size())));
  }
  std::vector<io::sentencepiece_piece> appended;
  std::optional<extend::unigram_table> unigram;
  std::unordered_map<std::string, float> unigram_scores;
  extend::bpe_extension extension = in_helper_order(
      [&] {
        if (tokenizer.wordpiece) return extend::extend_wordpiece(*tokenizer.wordpiece, chosen.bytes);
        if (!tokenizer.unigram)
          return extend::extend_bpe(tokenizer.model, chosen.bytes, extend::first_unused_id(tokenizer.model), options);
        // Unigram: the pieces appended with scores that make each its own text's best path.
        extend::unigram_extension grown = extend::extend_unigram(*tokenizer.unigram, chosen.bytes);
        unigram_scores = std::move(grown.scores);
        return std::move(grown.extension);
      }(),
      chosen.helper_ids);
  std::optional<extend::wordpiece_table> wordpiece;
  if (tokenizer.wordpiece) wordpiece = extend::extended_wordpiece_table(*tokenizer.wordpiece, extension);
  if (tokenizer.unigram) {
    appended = extend::appended_unigram_pieces(extension, unigram_scores);
    unigram = extend::extended_unigram_table(*tokenizer.unigram, appended);
  }
  if (const auto& sentencepiece = tokenizer.sentencepiece; sentencepiece && !tokenizer.unigram) {
    // The pieces' scores follow the order extend_bpe made them in; then the merges become the
    // ones SentencePiece's encoder uses, so that the tokenizer.json, the model beside it and the
    // drift measured agree.
    appended = extend::appended_pieces(sentencepiece->model, extension, sentencepiece->file.string());
    extension = extend::with_sentencepiece_merges(
        std::move(extension), extend::joined_pieces(sentencepiece->model, appended), sentencepiece->model);
  }
  if (extension.written.empty()) {
    std::string why = std::to_string(chosen.bytes.size()) + " tokens asked for, " +
                      std::to_string(extension.already_present.size()) + " already present, " +
                      std::to_string(extension.left_out.size()) + " left out";
    if (!extension.left_out.empty()) {
      // The first token and the kind of its reason, cut short: a line, not the token's whole text.
      const std::string& first = extension.left_out.front().bytes;
      why += " (the first: " + extend::quoted_token(first.substr(0, 32)) + (first.size() > 32 ? "..." : "") + " " +
             reason_kind(extension.left_out.front().reason) + ")";
    }
    extend::unsupported(tokenizer.file.string(), "extension adds no token: " + why);
  }
  const loaded_model& source = models.source();
  const bool from_helper = models.pair && !request.mean_of_pieces;
  const vocabulary_overlap overlap =
      from_helper ? screened_overlap(models.pair->matching.overlap, screen) : vocabulary_overlap();
  const auto plan = [&](const auto& source_table) {
    return plan_new_rows(extension, source_table,
                         from_helper ? chosen.helper_ids : std::unordered_map<std::string, Index>(),
                         from_helper ? &overlap : nullptr, source.embedding.rows(),
                         screen.synthesised() ? screen.flagged_ids() : std::vector<Index>());
  };
  new_rows_plan rows = tokenizer.wordpiece ? plan(extend::wordpiece_table(*tokenizer.wordpiece))
                       : tokenizer.unigram ? plan(extend::unigram_table(*tokenizer.unigram))
                                           : plan(extend::bpe_table(tokenizer.model));
  return {std::move(chosen),  std::move(extension), std::move(appended),
          std::move(unigram), std::move(wordpiece), std::move(rows)};
}

/// The drift on the probe, and the tokens per word on --probe-new, in the extended encoder (with
/// a SentencePiece BPE model, the merges its encoder uses: with_sentencepiece_merges; with a
/// Unigram model, its Viterbi encoder).
template <class Before, class After>
void measure_probes_with(const request_texts& texts, const Before& before, const After& after,
                         const extend_tokenizer& extended, extend_outcome& outcome) {
  outcome.drift = extend::drift(before, after, texts.probe);
  if (!texts.probe_new) return;
  fertility_figures f;
  f.words = extend::probe_words(*texts.probe_new).size();
  f.source = extend::fertility(before, *texts.probe_new).tokens_per_word();
  f.extended = extend::fertility(after, *texts.probe_new).tokens_per_word();
  if (const auto& helper = extended.chosen.helper.model)
    f.helper = extend::fertility(extend::bpe_table(*helper), *texts.probe_new).tokens_per_word();
  outcome.fertility = f;
}

inline void measure_probes(const request_texts& texts, const source_tokenizer& tokenizer,
                           const extend_tokenizer& extended, extend_outcome& outcome) {
  if (tokenizer.wordpiece)
    measure_probes_with(texts, extend::wordpiece_table(*tokenizer.wordpiece), *extended.wordpiece, extended, outcome);
  else if (tokenizer.unigram)
    measure_probes_with(texts, extend::unigram_table(*tokenizer.unigram), *extended.unigram, extended, outcome);
  else
    measure_probes_with(texts, extend::bpe_table(tokenizer.model), extended.extension.table, extended, outcome);
}

/// Makes the rows of the plan's helper entries with the engine, on transfer's overlap, each
/// copied to its id as the engine finishes it (extended_rows_writer).
inline void synthesise_helper_rows(const loaded_models& models, const new_rows_plan& plan,
                                   const synthesis_choice& synthesis, progress_reporter& progress,
                                   extended_rows_writer& rows, std::optional<clp::synthesis_report>& report,
                                   std::optional<clp::held_out_scores>& held_out) {
  if (plan.count(row_origin::helper) == 0) return;
  synthesised_embeddings scratch = allocate_outputs(models.source, models.helper.embedding.rows());
  synthesise(models.source, models.helper.embedding, plan.synthesis_overlap, synthesis, progress, scratch,
             {{}, [&](Index end) { rows.helper_rows_finished(scratch, end); }});
  report = scratch.report;
  held_out = scratch.held_out;
}

}  // namespace detail

namespace detail {

/// Refuses --drift-budget for a source its guard cannot keep within the budget, or leaves out of
/// the output the SentencePiece model beside a tokenizer.json (as before models were extended).
/// The guard reasons with one merge a new token; SentencePiece joins a new piece from any of its
/// splits, and WordPiece has no merges, so the guard could not promise the budget there.
inline void guard_drift_budget(source_tokenizer& tokenizer) {
  if (tokenizer.sentencepiece) {
    if (tokenizer.document.is_null())
      extend::unsupported(tokenizer.file.string(),
                          "--drift-budget is not supported for a SentencePiece source yet (its drift is reported)");
    tokenizer.sentencepiece.reset();
  }
  if (tokenizer.wordpiece)
    extend::unsupported(tokenizer.file.string(),
                        "--drift-budget is not supported for a WordPiece source yet (its drift is reported)");
}

}  // namespace detail

/// Runs the extension: `request`'s models read, its tokens chosen and the source's tokenizer
/// extended, the new rows made (from the helper as `synthesis` says, or as the mean of their
/// pieces), the source with its tokenizer extended and its matrices grown written to `target`;
/// a summary on stderr unless `quiet`. `built_in_probe` is the English probe of the program.
/// Throws on any error, leaving no output behind.
inline void run_extend(const extend_request& request, const synthesis_choice& synthesis, const output_target& target,
                       std::string_view built_in_probe, bool quiet) {
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  progress_reporter progress(quiet);
  extend_seconds seconds;
  request.check();
  target.check(request.has_helper() ? std::vector<std::filesystem::path>{request.pair.source, request.pair.helper}
                                    : std::vector<std::filesystem::path>{request.pair.source});
  if (!quiet) target.warn_of_staging_folders();
  synthesis.execution.check();
  const request_texts texts = read_request_texts(request, built_in_probe);

  // read -> extend the tokenizer -> make the rows -> write -> check -> report -> commit -> summary
  progress.begin("read");
  io::interruption_test_point("read");
  source_tokenizer tokenizer = read_source_tokenizer(request.pair.source);
  if (request.drift_budget) detail::guard_drift_budget(tokenizer);
  extend_models models;
  if (request.has_helper())
    models.pair.emplace(read_models(request.pair));
  else
    models.alone.emplace(read_source_model(request.pair));
  const loaded_model& source = models.source();
  const undertrained_screen screen =
      detail::screen_extend_source(models, synthesis.undertrained, synthesis.execution.threads);
  seconds.read = progress.end();
  if (!quiet && models.pair) print_matching_warnings(models.pair->matching);

  progress.begin("extend tokenizer");
  const extend_tokenizer extended = detail::extend_source_tokenizer(request, texts, tokenizer, models, screen);
  const new_rows_plan& plan = extended.rows;
  output_vocabulary vocabulary{
      extended_config(source.checkpoint.config(), plan.output_rows), source.checkpoint.json.generation_config, {}, {}};
  std::vector<std::filesystem::path> files_left_out;
  extended_tokenizer_files(request.pair.source, tokenizer, extended.extension, extended.appended, vocabulary,
                           files_left_out);
  seconds.tokenizer = progress.end();

  progress.begin("synthesize");
  const bool durable = target.durable();
  io::staging_directory staging(target.folder);
  synthesised_embeddings out = allocate_outputs(source, plan.output_rows);
  weights_output weights(staging.path(), durable, source, out);
  extended_rows_writer rows(
      source, plan, out, [&](Index end) { weights.rows_finished(end); }, synthesis.execution.threads);
  rows.advance();
  io::interruption_test_point("synthesize");
  std::optional<clp::synthesis_report> report;
  std::optional<clp::held_out_scores> held_out;
  if (models.pair) detail::synthesise_helper_rows(*models.pair, plan, synthesis, progress, rows, report, held_out);
  seconds.synthesize = progress.end();

  progress.begin("write");
  io::interruption_test_point("write");
  write_output(staging, durable, source.checkpoint.weights, weights, vocabulary, progress);
  seconds.write = progress.end();
  // Checked as verify checks any folder, before the commit; findings are warnings, not refusals.
  std::vector<verify::finding> findings =
      check_output(staging.path(), target.folder, {source.embedding_name, source.head_name.value_or("")},
                   synthesis.execution.threads, weights.value_scans());
  seconds.total = std::chrono::duration<double>(clock::now() - started).count();

  extend_outcome outcome{request,
                         source,
                         models.matching(),
                         extended.chosen,
                         extended.extension,
                         plan,
                         synthesis,
                         screen,
                         report,
                         held_out,
                         {},
                         {},
                         files_left_out,
                         std::move(findings),
                         seconds};
  detail::measure_probes(texts, tokenizer, extended, outcome);
  commit_output(staging, durable, target, write_partial_extend_report(outcome, target.report, target.folder));
  if (!quiet) print_extend_summary(outcome, target.folder, target.report);
}

}  // namespace clp_transfer
