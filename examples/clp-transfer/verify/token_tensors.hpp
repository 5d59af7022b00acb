// The tensors of a model folder that hold a row or a value per token, as `verify` finds them: by
// name, whatever their row counts (the check is whether those counts agree). The input embedding
// and the untied output head as the program finds them (io/embedding_names.hpp); the other
// well-known per-token matrices (vocabulary_tensors.hpp's per_token_matrix_suffixes: tied copies,
// the encoder's and decoder's embeddings, masked-LM heads); and per-token biases, floating-point
// tensors whose last name part is "bias" (or ends in "_bias") and whose one dimension other than
// leading ones is the embedding's rows or config.json's vocab_size.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/embedding_names.hpp"
#include "io/errors.hpp"
#include "io/model_weights.hpp"
#include "verify/finding.hpp"
#include "verify/model_folder.hpp"
#include "vocabulary_tensors.hpp"

namespace clp_transfer::verify {

/// What a per-token tensor is.
enum class token_tensor_role { embedding, head, matrix, bias };

/// "input embedding", "output head", "per-token matrix" or "per-token bias", for messages.
inline const char* role_name(token_tensor_role role) {
  switch (role) {
    case token_tensor_role::embedding:
      return "input embedding";
    case token_tensor_role::head:
      return "output head";
    case token_tensor_role::matrix:
      return "per-token matrix";
    case token_tensor_role::bias:
      break;
  }
  return "per-token bias";
}

/// A tensor with a row (or a value) per token.
struct token_tensor {
  std::string name;
  const io::weight_file* file = nullptr;    ///< the shard holding it
  const io::tensor_entry* entry = nullptr;  ///< its header entry in `file`
  std::int64_t rows = 0;                    ///< the tokens it holds a row or value for
  std::int64_t columns = 0;                 ///< values per token (1 for a bias)
  token_tensor_role role = token_tensor_role::matrix;

  /// A matrix of rows (the embedding, a head, a per-token matrix), not a bias.
  bool is_matrix() const { return role != token_tensor_role::bias; }
  /// "tensor "NAME" (FILE)", for messages naming it in passing.
  std::string description() const {
    return "tensor " + io::quoted_name(name) + " (" + file->path().filename().string() + ")";
  }
};

/// The per-token tensors of a model folder.
struct token_tensors {
  std::vector<token_tensor> tensors;  ///< the input embedding first, then in checkpoint order
  bool has_head = false;              ///< whether tensors[1] is the untied output head

  const token_tensor& embedding() const { return tensors.front(); }
  /// The matrix with the fewest rows (the embedding on a tie): the ids every token may take.
  const token_tensor& fewest_rows() const {
    const token_tensor* fewest = &tensors.front();
    for (const token_tensor& t : tensors)
      if (t.is_matrix() && t.rows < fewest->rows) fewest = &t;
    return *fewest;
  }
};

namespace detail {

/// Whether `name` is `suffix` or ends with "." + suffix.
inline bool ends_with_part(std::string_view name, std::string_view suffix) {
  if (name.size() < suffix.size() || name.substr(name.size() - suffix.size()) != suffix) return false;
  return name.size() == suffix.size() || name[name.size() - suffix.size() - 1] == '.';
}

/// The last "."-separated part of `name` is "bias" or ends in "_bias".
inline bool is_bias(std::string_view name) {
  const std::size_t dot = name.rfind('.');
  const std::string_view last = dot == std::string_view::npos ? name : name.substr(dot + 1);
  return last == "bias" || (last.size() > 5 && last.substr(last.size() - 5) == "_bias");
}

inline bool is_floating(io::dtype type) {
  return type == io::dtype::f32 || type == io::dtype::f64 || type == io::dtype::f16 || type == io::dtype::bf16;
}

/// The one dimension of `shape` other than leading ones, or nullopt when there are several.
inline std::optional<std::int64_t> single_dimension(const std::vector<std::int64_t>& shape) {
  std::size_t first = 0;
  while (first + 1 < shape.size() && shape[first] == 1) ++first;
  if (shape.empty() || first + 1 != shape.size()) return std::nullopt;
  return shape[first];
}

/// The entry for tensor `name` of `weights` in `role`; nullopt (and a finding) when it is not a
/// [rows, columns] matrix.
inline std::optional<token_tensor> matrix_entry(const io::model_weights& weights, const std::string& name,
                                                token_tensor_role role, std::vector<finding>& findings) {
  const io::located_tensor at = weights.locate(name);
  if (at.tensor.shape.size() != 2) {
    findings.push_back({finding_kind::vocab_size, at.file.path(),
                        "tensor " + io::quoted_name(name) + " is the " + role_name(role) + " but has shape " +
                            io::format_shape(at.tensor.shape) + ", not [rows, columns]"});
    return std::nullopt;
  }
  return token_tensor{name, &at.file, &at.tensor, at.tensor.shape[0], at.tensor.shape[1], role};
}

}  // namespace detail

namespace detail {

/// `found`, told that the vocabulary checks did not run, added to `findings`; nullopt.
inline std::nullopt_t no_embedding(finding found, std::vector<finding>& findings) {
  found.message +=
      "; the vocabulary checks did not run (name the tensors with --embedding-tensor and --lm-head-tensor)";
  findings.push_back(std::move(found));
  return std::nullopt;
}

}  // namespace detail

/// The per-token tensors of `weights` (see the top of this file); nullopt, with a finding, when
/// the input embedding cannot be found or is not a matrix.
/// @param[in]  weights            the folder's weights
/// @param[in]  names              tensor names given instead of found
/// @param[in]  config_vocab_size  config.json's vocab_size, when it states one
/// @param[out] findings           what is wrong with the tensors found
inline std::optional<token_tensors> find_token_tensors(const io::model_weights& weights, const tensor_choice& names,
                                                       std::optional<std::int64_t> config_vocab_size,
                                                       std::vector<finding>& findings) {
  const std::vector<std::string> all = weights.tensor_names();
  std::string embedding_name;
  std::optional<std::string> head_name;
  try {
    embedding_name = io::find_input_embedding(weights.folder(), all, names.embedding);
    head_name = io::find_output_embedding(weights.folder(), all, names.head);
  } catch (const clp::error& error) {
    return detail::no_embedding(finding_of_error(error, weights.folder(), finding_kind::no_embedding), findings);
  } catch (const io::file_error& error) {
    return detail::no_embedding(finding_of_error(error, weights.folder(), finding_kind::no_embedding), findings);
  }
  token_tensors result;
  auto embedding = detail::matrix_entry(weights, embedding_name, token_tensor_role::embedding, findings);
  if (!embedding) return std::nullopt;
  result.tensors.push_back(std::move(*embedding));
  if (head_name)
    if (auto head = detail::matrix_entry(weights, *head_name, token_tensor_role::head, findings)) {
      result.tensors.push_back(std::move(*head));
      result.has_head = true;
    }
  const std::int64_t rows = result.embedding().rows;
  for (const io::weight_file& shard : weights.shards())
    for (const io::tensor_entry& t : shard.tensors()) {
      if (t.name == embedding_name || (head_name && t.name == *head_name) || !detail::is_floating(t.dtype)) continue;
      const bool per_token_name =
          std::any_of(std::begin(per_token_matrix_suffixes), std::end(per_token_matrix_suffixes),
                      [&](std::string_view suffix) { return detail::ends_with_part(t.name, suffix); });
      const std::optional<std::int64_t> length = detail::single_dimension(t.shape);
      if (per_token_name && t.shape.size() == 2)
        result.tensors.push_back({t.name, &shard, &t, t.shape[0], t.shape[1], token_tensor_role::matrix});
      else if (detail::is_bias(t.name) && length && (*length == rows || length == config_vocab_size))
        result.tensors.push_back({t.name, &shard, &t, *length, 1, token_tensor_role::bias});
    }
  return result;
}

}  // namespace clp_transfer::verify
