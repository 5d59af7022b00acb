// Phase 1 of `clp-transfer transfer`: read the source and the helper model and check that
// their parts fit together. The intersection of the vocabularies starts here too, as soon as
// the tensor headers give the row counts; match_vocabularies.hpp collects it.
#pragma once

#include <clp/vocabulary.hpp>

#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "embedding.hpp"
#include "io/hf_model.hpp"
#include "io/safetensors.hpp"
#include "token_matching.hpp"
#include "transfer/arguments.hpp"

namespace clp::program {

/// One model as the transfer uses it.
struct loaded_model {
  io::model_folder folder;
  std::string embedding_name;
  embedding_matrix embedding;  ///< the input embedding, #rows by hidden size
  /// The source's untied output head (same shape and dtype as its embedding), if it has one.
  std::optional<std::string> head_name;
  std::optional<embedding_matrix> head;
};

struct loaded_models {
  loaded_model source, helper;
  /// The vocabularies' intersection (token_matching.hpp), running or done; match_vocabularies
  /// waits for it.
  std::future<token_matching> intersection;
};

namespace detail {

/// The vocabulary file of a model folder, for messages.
inline std::filesystem::path vocabulary_file(const std::filesystem::path& folder) {
  return std::filesystem::exists(folder / "tokenizer.json") ? folder / "tokenizer.json" : folder / "vocab.json";
}

/// The two vocabularies and their spellings, read on threads of their own.
struct vocabulary_reads {
  std::shared_future<tokenizer_reading> source, helper;

  /// Runs `read` on this thread meanwhile. If it throws, a vocabulary's error is reported
  /// instead, so errors come in the order of the checks, whichever read finished first.
  template <class Read>
  auto while_reading(Read read) const {
    try {
      return read();
    } catch (...) {
      source.get();
      helper.get();
      throw;
    }
  }
};

inline vocabulary_reads start_reading_vocabularies(const transfer_arguments& args) {
  auto read = [](std::filesystem::path folder) {
    return std::async(std::launch::async, [folder] { return read_tokenizer(folder); }).share();
  };
  return {read(args.source), read(args.helper)};
}

struct tensor_names {
  std::string source, helper;
  std::optional<std::string> head;
};

inline tensor_names find_tensor_names(const transfer_arguments& args, const io::model_folder& source,
                                      const io::model_folder& helper) {
  const std::vector<std::string> source_names = source.tensor_names();
  tensor_names names;
  names.source = io::find_input_embedding(args.source, source_names, args.embedding_tensor);
  names.head = io::find_output_embedding(args.source, source_names, args.lm_head_tensor);
  names.helper = io::find_input_embedding(args.helper, helper.tensor_names(), args.helper_embedding_tensor);
  return names;
}

/// Starts intersecting the vocabularies (as --match asks, then special tokens by role) with
/// the embeddings' row counts from the tensor headers. When a tensor is not 2-D its read fails
/// before the intersection is collected.
inline std::future<token_matching> start_intersection(const vocabulary_reads& vocabularies,
                                                      const io::model_folder& source, const io::model_folder& helper,
                                                      const tensor_names& names, const match_arguments& match) {
  const auto rows_in_header = [](const io::model_folder& folder, const std::string& name) -> Index {
    const std::vector<std::int64_t>& shape = folder.locate(name).tensor.shape;
    return shape.size() == 2 ? shape[0] : -1;
  };
  const Index source_rows = rows_in_header(source, names.source);
  const Index helper_rows = rows_in_header(helper, names.helper);
  if (source_rows < 0 || helper_rows < 0) return {};
  return std::async(std::launch::async, [vocabularies, source_rows, helper_rows, match] {
    clp::intersect_options options;
    options.source_rows = source_rows;
    options.target_rows = helper_rows;
    token_matching matching =
        match_tokens(vocabularies.source.get(), vocabularies.helper.get(), match, std::move(options));
    map_special_tokens(matching, vocabularies.source.get(), vocabularies.helper.get(), source_rows);
    return matching;
  });
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

/// The parts of each model must fit together: config.json and the embedding's width, the
/// token ids and the embedding's rows, the head and the embedding.
inline void require_consistent(const loaded_models& models, const io::token_vocabulary& source_vocabulary,
                               const io::token_vocabulary& helper_vocabulary) {
  const loaded_model& source = models.source;
  require_hidden_size(source.folder, source.embedding);
  require_hidden_size(models.helper.folder, models.helper.embedding);
  require_ids_fit(source_vocabulary, source.folder.directory(), source.embedding);
  require_ids_fit(helper_vocabulary, models.helper.folder.directory(), models.helper.embedding);
  if (!source.head) return;
  require_ids_fit(source_vocabulary, source.folder.directory(), *source.head);
  if (source.head->dtype() != source.embedding.dtype())
    io::detail::fail(source.folder.directory(), "the output head is " + source.head->dtype_name() +
                                                    " but the embedding is " + source.embedding.dtype_name() +
                                                    "; mixed dtypes are not supported");
}

}  // namespace detail

/// Reads both models: the two vocabularies on threads of their own, the two embeddings at
/// once, then the source's head. Throws naming the file at fault; of several faults, the
/// first in the order of the checks.
inline loaded_models read_models(const transfer_arguments& args) {
  io::model_folder source(args.source), helper(args.helper);
  const detail::vocabulary_reads vocabularies = detail::start_reading_vocabularies(args);
  const detail::tensor_names names =
      vocabularies.while_reading([&] { return detail::find_tensor_names(args, source, helper); });
  std::future<token_matching> intersection =
      detail::start_intersection(vocabularies, source, helper, names, args.matching);
  // Both at once: mapping fills the page tables of hundreds of MB each (finite_inputs.hpp
  // screens them later, on every core).
  auto [source_embedding, helper_embedding] = vocabularies.while_reading([&] {
    auto mapping_helper = std::async(std::launch::async, [&] { return embedding_matrix::read(helper, names.helper); });
    embedding_matrix mapped_source = embedding_matrix::read(source, names.source);
    return std::pair(std::move(mapped_source), mapping_helper.get());
  });
  std::optional<embedding_matrix> head = vocabularies.while_reading([&]() -> std::optional<embedding_matrix> {
    if (names.head) return embedding_matrix::read(source, *names.head);
    return std::nullopt;
  });

  loaded_models models{{std::move(source), names.source, std::move(source_embedding), names.head, std::move(head)},
                       {std::move(helper), names.helper, std::move(helper_embedding), std::nullopt, std::nullopt},
                       std::move(intersection)};
  detail::require_consistent(models, vocabularies.source.get().vocabulary, vocabularies.helper.get().vocabulary);
  return models;
}

}  // namespace clp::program
