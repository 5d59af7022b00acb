// What an extension is asked to add, as the command line gives it (--helper or none, --add N,
// --tokens FILE, --probe, --probe-new), its refusals before any work, and the tokens chosen
// once the source's tokenizer and the helper are read: compared by the bytes they stand for.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "errors.hpp"
#include "extend/helper_tokens.hpp"
#include "extend/source_tokenizer.hpp"
#include "extend/token_choice.hpp"
#include "io/hf_checkpoint.hpp"
#include "io/json/file.hpp"
#include "library_names.hpp"
#include "transfer/model_pair.hpp"

namespace clp_transfer {

/// What to add, and the probes that measure it.
struct extend_request {
  model_pair pair;                    ///< pair.helper empty: no helper
  std::filesystem::path tokens_file;  ///< --tokens: the tokens to add; empty: the helper's
  std::optional<std::size_t> add;     ///< --add N: the first N the source lacks, in the helper's order
  std::filesystem::path probe;        ///< --probe; empty: the English probe built into the program
  std::filesystem::path probe_new;    ///< --probe-new; empty: none
  /// --drift-budget: the share of the probe's words (in [0, 1]) whose ids may change; a token that
  /// would change more is left out. Empty: no budget.
  std::optional<double> drift_budget;
  /// --method mean-of-pieces: every new row the mean of its pieces, with a helper too.
  bool mean_of_pieces = false;

  bool has_helper() const { return !pair.helper.empty(); }

  /// Refuses, before any work, what cannot be asked: no helper and no --tokens (nothing to add),
  /// --add without a helper (no order to take the first N in), --add with --tokens, --add 0.
  /// Throws clp::invalid_argument naming the option.
  void check() const {
    if (!has_helper() && tokens_file.empty())
      throw clp::invalid_argument(option_facts("--tokens"),
                                  "is needed without --helper: the tokens to add come from the helper or from a list");
    if (add && !tokens_file.empty())
      throw clp::invalid_argument(option_facts("--add"), "cannot be combined with --tokens, which lists every token");
    if (add && !has_helper())
      throw clp::invalid_argument(option_facts("--add"), "needs --helper: it takes the first N of the helper's tokens");
    if (add && *add == 0) throw clp::invalid_argument(option_facts("--add"), "must be at least 1, not 0");
    if (drift_budget && !(*drift_budget >= 0 && *drift_budget <= 1)) {
      std::ostringstream given;  // as typed, not std::to_string's six decimals
      given << *drift_budget;
      throw clp::invalid_argument(option_facts("--drift-budget"),
                                  "must be a share of the probe's words from 0 to 1 (0.01: 1%), got " + given.str());
    }
  }
};

/// The texts a request names, read before the models: the probes and the token list.
struct request_texts {
  std::string probe;       ///< the English probe or --probe's text
  std::string probe_name;  ///< "built-in English probe" or --probe's path
  std::optional<std::string> probe_new;
  std::vector<std::string> listed;  ///< --tokens' entries
};

/// Reads the texts of `request`; `built_in_probe` is the program's English probe.
inline request_texts read_request_texts(const extend_request& request, std::string_view built_in_probe) {
  request_texts texts;
  if (request.probe.empty()) {
    texts.probe = std::string(built_in_probe);
    texts.probe_name = "built-in English probe";
  } else {
    texts.probe = io::read_text_file(request.probe);
    texts.probe_name = request.probe.string();
    // A probe without a word would report a drift of 0 of 0 words: nothing was measured.
    if (extend::probe_words(texts.probe).empty())
      throw clp::invalid_argument(io::about(request.probe),
                                  "holds no word: --probe names a text in the source's "
                                  "language to measure drift on");
  }
  if (!request.probe_new.empty()) {
    texts.probe_new = io::read_text_file(request.probe_new);
    if (extend::probe_words(*texts.probe_new).empty())
      throw clp::invalid_argument(io::about(request.probe_new),
                                  "holds no word: --probe-new names a text in the "
                                  "new language to count tokens a word on");
  }
  if (!request.tokens_file.empty()) texts.listed = read_token_list(request.tokens_file);
  return texts;
}

/// The tokens to add and where each may take its row from.
struct chosen_tokens {
  std::vector<std::string> bytes;  ///< the tokens to add, in the order to add them
  /// With a helper: its tokens the source lacks (by bytes), whatever --add or --tokens chose.
  std::size_t helper_missing = 0;
  /// The helper id of each helper token by its bytes (the first in the helper's order).
  std::unordered_map<std::string, Index> helper_ids;
  helper_candidates helper;  ///< empty without a helper
};

/// Chooses the tokens of `request` (extend::choose_tokens: all the source lacks, the first
/// --add N, or --tokens' list) against the source's tokenizer (its vocabulary and its added
/// tokens). Throws naming --tokens' file for a listed token that is empty, repeated or one the
/// source has.
/// @param[in] helper  the helper model; null without one
inline chosen_tokens choose_new_tokens(const extend_request& request, const request_texts& texts,
                                       const source_tokenizer& source, const hf_checkpoint* helper) {
  std::unordered_set<std::string> present = extend::vocabulary_bytes(source.model);
  present.insert(source.added_contents.begin(), source.added_contents.end());
  chosen_tokens chosen;
  if (helper) {
    chosen.helper = read_helper_candidates(*helper);
    std::unordered_set<std::string> missing;
    for (std::size_t i = 0; i < chosen.helper.bytes.size(); ++i) {
      const std::string& bytes = chosen.helper.bytes[i];
      chosen.helper_ids.emplace(bytes, Index(chosen.helper.ids[i]));
      if (!bytes.empty() && !present.count(bytes)) missing.insert(bytes);
    }
    chosen.helper_missing = missing.size();
  }
  extend::token_request which;
  if (!request.tokens_file.empty()) {
    which.which = extend::token_request::kind::listed;
    which.listed = texts.listed;
    which.origin = request.tokens_file.string();
  } else if (request.add) {
    which.which = extend::token_request::kind::first;
    which.count = *request.add;
  }
  chosen.bytes = extend::choose_tokens(chosen.helper.bytes, present, which);
  return chosen;
}

}  // namespace clp_transfer
