// What the screen for under-trained source rows found (transfer/undertrained.hpp), as the JSON
// reports of `transfer` and `evaluate` list it and as one summary line counts it.
#pragma once

#include <clp/undertrained.hpp>

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "library_names.hpp"
#include "transfer/undertrained.hpp"
#include "transfer/undertrained_choice.hpp"

namespace clp_transfer {

namespace detail {

inline const char* reference_name(clp::undertrained_reference reference) {
  switch (reference) {
    case clp::undertrained_reference::unused_ids:
      return "unused_ids";
    case clp::undertrained_reference::cluster:
      return "cluster";
    case clp::undertrained_reference::none:
      break;
  }
  return "none";
}

inline nlohmann::ordered_json optional_json(const std::optional<double>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

/// One matrix's thresholds and reference.
inline nlohmann::ordered_json screen_json(const clp::undertrained_rows& rows, bool norm) {
  nlohmann::ordered_json json;
  if (norm) json["norm_threshold"] = rows.norm_threshold;
  json["cosine_threshold"] = optional_json(rows.cosine_threshold);
  json["reference"] = reference_name(rows.reference);
  json["reference_ids"] = rows.reference_ids;
  return json;
}

/// Each flagged token: id, text, the indicators' values and which flagged it.
inline nlohmann::ordered_json flagged_json(const undertrained_screen& screen) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const flagged_token& t : screen.flagged) {
    const auto r = static_cast<std::size_t>(t.id);
    const clp::undertrained_rows& e = screen.embedding;
    nlohmann::ordered_json entry{{"id", t.id}, {"text", t.text}, {"norm", e.norms[r]}};
    entry["cosine"] = e.cosines.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.cosines[r]);
    if (screen.head)
      entry["head_cosine"] = screen.head->cosines.empty() ? nlohmann::ordered_json(nullptr)
                                                          : nlohmann::ordered_json(screen.head->cosines[r]);
    nlohmann::ordered_json by = nlohmann::ordered_json::array();
    if (t.by_norm) by.push_back("norm");
    if (t.by_cosine) by.push_back("cosine");
    if (t.by_head_cosine) by.push_back("head_cosine");
    entry["flagged_by"] = by;
    list.push_back(std::move(entry));
  }
  return list;
}

/// Flagged tokens by indicator (a token may count under several).
struct indicator_counts {
  Index norm = 0, cosine = 0, head_cosine = 0;
};

inline indicator_counts count_indicators(const undertrained_screen& screen) {
  indicator_counts counts;
  for (const flagged_token& t : screen.flagged) {
    counts.norm += t.by_norm;
    counts.cosine += t.by_cosine;
    counts.head_cosine += t.by_head_cosine;
  }
  return counts;
}

}  // namespace detail

/// The screen for the JSON reports: the mode, and when it ran, the known-unused rows, each
/// matrix's thresholds and reference, and every flagged token.
inline nlohmann::ordered_json undertrained_json(const undertrained_screen& screen) {
  nlohmann::ordered_json json;
  json["mode"] = screen.mode ? nlohmann::ordered_json(undertrained_name(*screen.mode)) : nullptr;
  json["screened"] = screen.screened();
  if (!screen.screened()) return json;
  const detail::indicator_counts counts = detail::count_indicators(screen);
  json["flagged"] = screen.flagged.size();
  json["synthesised"] = screen.synthesised() ? screen.flagged.size() : 0;
  json["flagged_by"] = {{"norm", counts.norm}, {"cosine", counts.cosine}, {"head_cosine", counts.head_cosine}};
  json["unused_ids"] = {{"reserved_named", screen.reserved_named},
                        {"without_token", Index(screen.unused_ids.size()) - screen.reserved_named}};
  json["embedding"] = detail::screen_json(screen.embedding, true);
  json["head"] = screen.head ? detail::screen_json(*screen.head, false) : nlohmann::ordered_json(nullptr);
  if (screen.head) json["head"]["name"] = screen.head_name;
  json["tokens"] = detail::flagged_json(screen);
  return json;
}

/// The screen in a few words, when it ran (else empty): how many source rows of shared tokens
/// were flagged, by which indicator, what became of them, and `where` the list is.
/// @param[in] shared  the shared tokens (the matched overlap's pairs), for the count
/// @param[in] where   "listed in REPORT", or the option that lists them
inline std::string undertrained_summary(const undertrained_screen& screen, Index shared, const std::string& where) {
  if (!screen.screened()) return {};
  const std::string among = " flagged among the source rows of " + std::to_string(shared) + " shared tokens";
  if (screen.flagged.empty()) return "none" + among + " (--undertrained " + undertrained_name(*screen.mode) + ")";
  const detail::indicator_counts counts = detail::count_indicators(screen);
  std::string by = "norm " + std::to_string(counts.norm) + ", cosine " + std::to_string(counts.cosine);
  if (screen.head) by += ", head cosine " + std::to_string(counts.head_cosine);
  return std::to_string(screen.flagged.size()) + among + " (" + by + "), " +
         (screen.synthesised() ? "synthesised like missing tokens" : "copied (--undertrained report)") + "; " + where;
}

}  // namespace clp_transfer
