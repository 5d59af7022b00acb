// Which tensors of a checkpoint are its embeddings, found by the names the model families give
// them (or named by the user): the input embedding, and the output head when it is untied.
#pragma once

#include <algorithm>
#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/errors.hpp"
#include "io/library_names.hpp"

namespace clp_transfer::io {

/// Name endings of an input embedding matrix, by family: wte.weight (GPT-2, GPT-J),
/// embed_tokens.weight (Llama, Mistral, OPT, BART), word_embeddings.weight (BLOOM),
/// embed_in.weight (GPT-NeoX, Pythia), tok_embeddings.weight (Meta's original Llama
/// layout), embeddings.word_embeddings.weight (BERT, RoBERTa), shared.weight (T5, BART).
inline constexpr std::array<std::string_view, 7> input_embedding_suffixes = {
    "wte.weight",      "embed_tokens.weight",   "word_embeddings.weight",
    "embed_in.weight", "tok_embeddings.weight", "embeddings.word_embeddings.weight",
    "shared.weight"};

/// Name endings of an untied output head (lm_head.weight: most families; embed_out.weight:
/// GPT-NeoX; output.weight: Meta's original Llama layout). A checkpoint without one ties
/// the head to the input embedding.
inline constexpr std::array<std::string_view, 3> output_embedding_suffixes = {"lm_head.weight", "embed_out.weight",
                                                                              "output.weight"};

/// Model roots that transformers puts in front of the embedding's name. A match with no
/// prefix or one of these is the model's own embedding, preferred over look-alikes deeper in
/// the tree (T5's encoder.embed_tokens.weight next to shared.weight).
inline constexpr std::array<std::string_view, 3> embedding_name_roots = {"model", "transformer", "gpt_neox"};

namespace detail {

/// Picks the single tensor among `names` that ends with one of `suffixes` (at a "."
/// boundary, and outside numbered blocks such as layers.3), preferring a full well-known
/// name when several match; nullopt when none does.
/// @param[in] where     checkpoint, for messages
/// @param[in] names     every tensor name in the checkpoint
/// @param[in] suffixes  input_embedding_suffixes or output_embedding_suffixes
/// @param[in] what      "input embedding" or "output head", for messages
template <std::size_t N>
std::optional<std::string> find_embedding(const std::filesystem::path& where, const std::vector<std::string>& names,
                                          const std::array<std::string_view, N>& suffixes, const std::string& what) {
  std::vector<std::string> candidates, full_names;
  for (const std::string& name : names) {
    for (std::string_view suffix : suffixes) {
      const std::string_view whole = name;
      if (whole.size() < suffix.size() || whole.substr(whole.size() - suffix.size()) != suffix) continue;
      std::string_view prefix = whole.substr(0, whole.size() - suffix.size());
      if (!prefix.empty() && prefix.back() != '.') continue;
      if (!prefix.empty()) prefix.remove_suffix(1);
      bool in_numbered_block = false;
      for (std::size_t start = 0; start < prefix.size();) {
        const std::size_t end = std::min(prefix.find('.', start), prefix.size());
        const std::string_view part = prefix.substr(start, end - start);
        in_numbered_block |= !part.empty() && part.find_first_not_of("0123456789") == part.npos;
        start = end + 1;
      }
      if (in_numbered_block) continue;
      candidates.push_back(name);
      if (prefix.empty() ||
          std::find(embedding_name_roots.begin(), embedding_name_roots.end(), prefix) != embedding_name_roots.end())
        full_names.push_back(name);
      break;
    }
  }
  if (candidates.empty()) return std::nullopt;
  if (candidates.size() == 1) return candidates.front();
  if (full_names.size() == 1) return full_names.front();
  std::string list;
  for (const std::string& name : candidates) list += (list.empty() ? "" : ", ") + quoted_name(name);
  malformed(where, "several tensors could be the " + what + " (" + list + "); name one explicitly");
}

/// Checks that an explicitly named tensor exists.
/// @param[in] where  checkpoint, for messages
/// @param[in] names  every tensor name in the checkpoint
/// @param[in] name   the name given
void require_tensor(const std::filesystem::path& where, const std::vector<std::string>& names, const std::string& name);

}  // namespace detail

/// The input embedding's tensor name: `explicit_name` when given, else found by
/// input_embedding_suffixes; throws naming `where` when none or several ambiguous ones match.
/// @param[in] where          checkpoint (folder or file), for messages
/// @param[in] names          every tensor name in the checkpoint
/// @param[in] explicit_name  user override; empty to search
std::string find_input_embedding(const std::filesystem::path& where, const std::vector<std::string>& names,
                                 const std::string& explicit_name = {});

/// The untied output head's tensor name, or nullopt when the head is tied to the input
/// embedding: `explicit_name` when given, else found by output_embedding_suffixes.
/// @param[in] where          checkpoint (folder or file), for messages
/// @param[in] names          every tensor name in the checkpoint
/// @param[in] explicit_name  user override; empty to search
std::optional<std::string> find_output_embedding(const std::filesystem::path& where,
                                                 const std::vector<std::string>& names,
                                                 const std::string& explicit_name = {});

}  // namespace clp_transfer::io
