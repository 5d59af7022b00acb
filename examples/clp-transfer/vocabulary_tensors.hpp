// Which tensors of a source checkpoint hold one row or one value per token, and what the transfer
// does with each, so that every one of them follows the new vocabulary or is named in a warning.
//
// Pure: it reads tensor names, shapes and dtypes (and, through a callback, whether two tensors'
// bytes are equal), never tensor data, so it runs before anything is read.
//
// The roles, decided in this order for each tensor:
//  1. the input embedding (named by the caller): CLP-Transfer's source rows;
//  2. a tied copy: exactly the embedding's shape and dtype and, as the caller confirms, the
//     same bytes (T5's encoder.embed_tokens.weight and decoder.embed_tokens.weight beside
//     shared.weight, BERT's cls.predictions.decoder.weight, a tied head saved twice). Its
//     output is the output embedding's bytes, so the copies stay equal by construction;
//  3. transferred: its own source rows, combined with the same weights as the embedding's
//     rows (overlapping rows copied, the rest synthesised): the untied output head; a
//     per-token output bias (1-D [rows] or [1, rows], last name part "bias" or ending in
//     "_bias": cls.predictions.bias, final_logits_bias, lm_head.bias, ...), transferred as a
//     #rows by 1 matrix; a [rows, n] matrix with a well-known per-token name that is not a
//     copy (per_token_matrix_suffixes); and every tensor named by --transfer-tensor;
//  4. warned: any other tensor with a dimension equal to the embedding's rows (or to the
//     config's vocab_size when that differs): copied unchanged and named in a warning.
// Every other tensor is no concern of this file: the program copies it unchanged.
//
// Mixed dtypes are supported: each transferred tensor keeps its own dtype (an F16 embedding
// with an F32 head gives an F16 output embedding and an F32 output head), since the weights are
// computed once, in float32, from the helper model, and applied to each source matrix in its
// own element type.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <clp/error.hpp>

#include "io/errors.hpp"
#include "library_names.hpp"

namespace clp_transfer {

/// One tensor of a checkpoint as its header describes it.
struct tensor_description {
  std::string name;
  std::vector<std::int64_t> shape;
  std::string dtype;  ///< safetensors dtype name, e.g. "BF16"
};

/// What the transfer does with a vocabulary-sized tensor.
enum class vocabulary_role {
  embedding,    ///< the input embedding: the rows CLP-Transfer copies and synthesises
  tied_copy,    ///< byte-equal to the embedding: written as the output embedding's bytes
  transferred,  ///< its own rows, the embedding's weights (heads, per-token biases, --transfer-tensor)
  warned,       ///< vocabulary-sized but not transferred: copied unchanged and named in a warning
};

/// "embedding", "tied copy", "transferred" or "warned", for the summary and the JSON report.
inline const char* vocabulary_role_name(vocabulary_role role) {
  switch (role) {
    case vocabulary_role::embedding:
      return "embedding";
    case vocabulary_role::tied_copy:
      return "tied copy";
    case vocabulary_role::transferred:
      return "transferred";
    case vocabulary_role::warned:
      return "warned";
  }
  return "?";
}

/// A tensor of the source checkpoint that holds one row or value per token, and its role.
///
/// A tensor of shape [1, ..., 1, rows, c1, ..., cn] (leading ones, then the vocabulary
/// dimension at `axis`) is, in safetensors' row-major order, the #rows by (c1 * ... * cn)
/// matrix the program hands the library; its output has the same shape with target rows at
/// `axis` (output_shape). A 1-D bias [rows] is #rows by 1; BART's final_logits_bias
/// [1, rows] is #rows by 1 with axis 1.
struct vocabulary_tensor {
  std::string name;
  std::vector<std::int64_t> shape;  ///< in the source
  std::string dtype;
  vocabulary_role role = vocabulary_role::warned;
  /// Why it has its role, for the summary and the report: "input embedding", "untied output
  /// head", "per-token output bias", "tied copy of shared.weight", "named by --transfer-tensor",
  /// "dimension 0 of [5120, 64] is the source's 5120 rows", ...
  std::string reason;
  /// The dimension of `shape` that counts tokens. Meaningful for every role but warned, where
  /// it is the first dimension found of the vocabulary's size.
  std::size_t axis = 0;
  /// Values per token: the product of the dimensions after `axis` (1 for a bias).
  std::int64_t columns = 0;

  /// The shape to write: `shape` with `target_rows` at `axis`. Only for roles other than warned
  /// (a warned tensor is copied as it is).
  /// @param[in] target_rows  rows of the output embedding (the helper's rows)
  std::vector<std::int64_t> output_shape(std::int64_t target_rows) const {
    std::vector<std::int64_t> out = shape;
    out[axis] = target_rows;
    return out;
  }
};

/// What the caller knows beyond the tensor list.
struct vocabulary_tensor_options {
  /// The untied output head: io::find_output_embedding's answer (found by name, or named with
  /// --lm-head-tensor); nullopt when the head is tied. It is transferred, unless its bytes equal
  /// the embedding's, when it is a tied copy (same output, computed once).
  std::optional<std::string> head;
  /// --transfer-tensor NAME, repeatable: tensors to transfer with the embedding's weights
  /// whatever their name. Each must exist, be floating point, and have the embedding's rows as
  /// its first dimension other than leading ones. Repeats and the embedding itself are allowed
  /// (no effect).
  std::vector<std::string> transfer_tensors;
  /// The language model's vocab_size from config.json (language_model_vocab_size), when it
  /// differs from the embedding's rows (padded embeddings): tensors with a dimension of this
  /// size are warned about too. nullopt or equal to the rows: no extra check.
  std::optional<std::int64_t> config_vocab_size;
};

/// Every vocabulary-sized tensor of a checkpoint, in the checkpoint's order.
struct vocabulary_plan {
  std::vector<vocabulary_tensor> tensors;

  /// The entry for tensor `name`, or nullptr when that tensor is not vocabulary-sized.
  const vocabulary_tensor* find(std::string_view name) const {
    for (const vocabulary_tensor& t : tensors)
      if (t.name == name) return &t;
    return nullptr;
  }
  /// The entries with `role`, in checkpoint order.
  std::vector<const vocabulary_tensor*> with_role(vocabulary_role role) const {
    std::vector<const vocabulary_tensor*> out;
    for (const vocabulary_tensor& t : tensors)
      if (t.role == role) out.push_back(&t);
    return out;
  }
};

/// Confirms a tied copy: true when tensor `name` holds exactly the embedding's bytes. Called
/// only for tensors of exactly the embedding's shape and dtype, at most once each.
using equal_to_embedding = std::function<bool(const std::string& name)>;

/// Name endings (at a "." boundary) of [rows, n] matrices that hold one row per token: when not
/// a tied copy, such a matrix is transferred rather than warned about. Input embeddings that
/// are not the one being transferred (T5's and BART's encoder/decoder embed_tokens when
/// untied), output heads of the masked-LM families (BERT cls.predictions.decoder, RoBERTa
/// lm_head.decoder, ALBERT predictions.decoder, DistilBERT vocab_projector, ELECTRA
/// generator_lm_head) and the causal-LM heads io::output_embedding_suffixes knows.
inline constexpr std::string_view per_token_matrix_suffixes[] = {
    "embed_tokens.weight",    "word_embeddings.weight",  "shared.weight",          "wte.weight",
    "lm_head.weight",         "embed_out.weight",        "lm_head.decoder.weight", "predictions.decoder.weight",
    "vocab_projector.weight", "generator_lm_head.weight"};

namespace detail {

/// "[2, 3]" for a shape, as messages show it.
inline std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

inline bool is_floating_dtype(std::string_view dtype) {
  return dtype == "F32" || dtype == "F64" || dtype == "F16" || dtype == "BF16";
}

/// Whether `name` is `suffix` or ends with "." + suffix.
inline bool has_name_suffix(std::string_view name, std::string_view suffix) {
  if (name.size() < suffix.size() || name.substr(name.size() - suffix.size()) != suffix) return false;
  return name.size() == suffix.size() || name[name.size() - suffix.size() - 1] == '.';
}

/// The last "."-separated part of `name` is "bias" or ends in "_bias".
inline bool is_bias_name(std::string_view name) {
  const std::size_t dot = name.rfind('.');
  const std::string_view last = dot == std::string_view::npos ? name : name.substr(dot + 1);
  return last == "bias" || (last.size() > 5 && last.substr(last.size() - 5) == "_bias");
}

/// The vocabulary dimension of `shape` when its first dimension other than leading ones is
/// `rows`; nullopt otherwise.
inline std::optional<std::size_t> vocabulary_axis(const std::vector<std::int64_t>& shape, std::int64_t rows) {
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1 && rows != 1) continue;
    if (shape[i] == rows) return i;
    return std::nullopt;
  }
  return std::nullopt;
}

/// The first dimension of `shape` equal to `rows`, anywhere; nullopt when none is.
inline std::optional<std::size_t> any_axis_of(const std::vector<std::int64_t>& shape, std::int64_t rows) {
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == rows) return i;
  return std::nullopt;
}

inline std::int64_t columns_after(const std::vector<std::int64_t>& shape, std::size_t axis) {
  std::int64_t columns = 1;
  for (std::size_t i = axis + 1; i < shape.size(); ++i) columns *= shape[i];
  return columns;
}

/// A tensor of the checkpoint `where` that cannot play the part it was given.
[[noreturn]] inline void refuse_tensor(const std::filesystem::path& where, const std::string& tensor,
                                       const std::string& problem) {
  io::malformed(where, problem, tensor);
}

/// A --transfer-tensor name that the checkpoint cannot serve.
[[noreturn]] inline void refuse_option(const std::filesystem::path& where, const std::string& problem) {
  clp::error_facts facts = io::about(where);
  facts.argument = "--transfer-tensor";
  throw clp::invalid_argument(std::move(facts), problem);
}

}  // namespace detail

namespace detail {

inline const tensor_description* find_tensor(const std::vector<tensor_description>& tensors, const std::string& name) {
  for (const tensor_description& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

/// The input embedding, which must be [rows, cols]; and the head and the --transfer-tensor
/// names of `options`, which must name tensors that can follow its rows.
inline const tensor_description& checked_embedding(const std::filesystem::path& where,
                                                   const std::vector<tensor_description>& tensors,
                                                   const std::string& embedding_name,
                                                   const vocabulary_tensor_options& options) {
  const tensor_description* embedding = find_tensor(tensors, embedding_name);
  if (!embedding) refuse_tensor(where, embedding_name, "is the input embedding, but no tensor of the checkpoint");
  if (embedding->shape.size() != 2 || embedding->shape[0] <= 0)
    refuse_tensor(where, embedding_name,
                  "is the input embedding, but has shape " + shape_text(embedding->shape) + ", not [rows, cols]");
  const std::int64_t rows = embedding->shape[0];
  if (options.head) {
    const tensor_description* head = find_tensor(tensors, *options.head);
    if (!head) refuse_tensor(where, *options.head, "is the output head, but no tensor of the checkpoint");
    if (head->shape.size() != 2 || head->shape[0] != rows)
      refuse_tensor(where, *options.head,
                    "is the output head, but has shape " + shape_text(head->shape) + ", not [" + std::to_string(rows) +
                        ", cols] like the input embedding \"" + embedding_name + "\"");
  }
  for (const std::string& name : options.transfer_tensors) {
    const tensor_description* t = find_tensor(tensors, name);
    if (!t) refuse_option(where, "\"" + name + "\": no such tensor in the checkpoint");
    if (!is_floating_dtype(t->dtype))
      refuse_option(where, "\"" + name + "\" is " + t->dtype + ", not a floating-point tensor (F32, F64, F16 or BF16)");
    if (!vocabulary_axis(t->shape, rows))
      refuse_option(where, "\"" + name + "\" has shape " + shape_text(t->shape) +
                               ", which does not start with the input embedding's " + std::to_string(rows) +
                               " rows (after leading 1s)");
  }
  return *embedding;
}

/// The role of tensor `t` (not the embedding) and why, in `entry`; false when it is not
/// vocabulary-sized.
inline bool decide_role(const tensor_description& t, const tensor_description& embedding,
                        const vocabulary_tensor_options& options, const equal_to_embedding& equal_bytes,
                        vocabulary_tensor& entry) {
  const std::int64_t rows = embedding.shape[0];
  const std::optional<std::size_t> axis = vocabulary_axis(t.shape, rows);
  const bool floating = is_floating_dtype(t.dtype);
  const auto role = [&](vocabulary_role r, std::string reason) {
    entry.role = r;
    entry.reason = std::move(reason);
    return true;
  };
  if (axis) {
    entry.axis = *axis;
    entry.columns = columns_after(t.shape, *axis);
  }
  if (t.shape == embedding.shape && t.dtype == embedding.dtype && equal_bytes(t.name))
    return role(vocabulary_role::tied_copy, "tied copy of " + embedding.name + " (equal bytes)");
  if (options.head && t.name == *options.head) return role(vocabulary_role::transferred, "untied output head");
  if (std::find(options.transfer_tensors.begin(), options.transfer_tensors.end(), t.name) !=
      options.transfer_tensors.end())
    return role(vocabulary_role::transferred, "named by --transfer-tensor");
  if (axis && floating && t.shape.size() == *axis + 1 && is_bias_name(t.name))
    return role(vocabulary_role::transferred, "per-token output bias");
  if (axis && floating && *axis == 0 && t.shape.size() == 2 &&
      std::any_of(std::begin(per_token_matrix_suffixes), std::end(per_token_matrix_suffixes),
                  [&](std::string_view suffix) { return has_name_suffix(t.name, suffix); }))
    return role(vocabulary_role::transferred, "per-token matrix (not equal to " + embedding.name + ")");
  if (const auto at = any_axis_of(t.shape, rows)) {
    entry.axis = *at;
    return role(vocabulary_role::warned, "dimension " + std::to_string(*at) + " of " + shape_text(t.shape) +
                                             " is the input embedding's " + std::to_string(rows) + " rows");
  }
  const bool other_vocab_size = options.config_vocab_size && *options.config_vocab_size != rows;
  if (const auto at = other_vocab_size ? any_axis_of(t.shape, *options.config_vocab_size) : std::nullopt) {
    entry.axis = *at;
    return role(vocabulary_role::warned, "dimension " + std::to_string(*at) + " of " + shape_text(t.shape) +
                                             " is config.json's vocab_size " +
                                             std::to_string(*options.config_vocab_size));
  }
  return false;
}

}  // namespace detail

/// Decides the role of every vocabulary-sized tensor of the source checkpoint (see the top of
/// this file for the rules and their order).
///
/// @param[in] where             the source checkpoint (folder), for messages
/// @param[in] tensors           every tensor of the source checkpoint, in file order (shards in
///                              order)
/// @param[in] embedding_name    the input embedding (io::find_input_embedding); must be 2-D
/// @param[in] options           head, --transfer-tensor names, config vocab_size
/// @param[in] equal_bytes       whether a tensor of the embedding's shape and dtype holds its
///                              bytes (the program compares the mapped bytes)
/// @return every tensor with a dimension of the embedding's rows (and the ones named by
///         options), embedding included, in `tensors` order
/// Throws io::malformed_file naming `where` and the tensor when the embedding or head is not
/// [rows, n], clp::invalid_argument naming `where` and --transfer-tensor when a name it gives is
/// missing, not floating point, or not vocabulary-sized.
inline vocabulary_plan plan_vocabulary_tensors(const std::filesystem::path& where,
                                               const std::vector<tensor_description>& tensors,
                                               const std::string& embedding_name,
                                               const vocabulary_tensor_options& options,
                                               const equal_to_embedding& equal_bytes) {
  const tensor_description& embedding = detail::checked_embedding(where, tensors, embedding_name, options);
  vocabulary_plan plan;
  for (const tensor_description& t : tensors) {
    vocabulary_tensor entry;
    entry.name = t.name;
    entry.shape = t.shape;
    entry.dtype = t.dtype;
    if (t.name == embedding_name) {
      entry.role = vocabulary_role::embedding;
      entry.reason = "input embedding";
      entry.columns = t.shape[1];
    } else if (!detail::decide_role(t, embedding, options, equal_bytes, entry)) {
      continue;  // not vocabulary-sized
    }
    plan.tensors.push_back(std::move(entry));
  }
  return plan;
}

/// The warning line for a warned tensor (without the "clp-transfer: warning: " prefix): what it
/// is, that it is copied unchanged, and how to transfer it.
/// @param[in] tensor  an entry of role warned
inline std::string warning_text(const vocabulary_tensor& tensor) {
  return "tensor \"" + tensor.name + "\" " + detail::shape_text(tensor.shape) + " " + tensor.dtype + ": " +
         tensor.reason + ", but it is not a known per-token tensor; copied unchanged (--transfer-tensor " +
         tensor.name + " transfers it)";
}

}  // namespace clp_transfer
