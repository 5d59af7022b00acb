// Reads a model pair (model_pair.hpp): the source and the helper model, each file once
// (io/hf_checkpoint.hpp), checked that their parts fit together, and their vocabularies matched
// (eq. 2's overlap: which helper tokens the source already has, and which rows are left to
// synthesise). Nothing here decides what the output's vocabulary is.
// The embeddings' pages are brought in while the tokenizers are parsed, and the matching runs
// on a thread of its own as soon as the tensor headers give the row counts, while the
// embeddings are mapped.
#pragma once

#include <clp/vocabulary.hpp>

#include <cstdint>
#include <exception>
#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>

#include "io/embedding_matrix.hpp"
#include "io/embedding_names.hpp"
#include "io/errors.hpp"
#include "io/hf_checkpoint.hpp"
#include "io/language_model_config.hpp"
#include "io/model_weights.hpp"
#include "io/safetensors/reader.hpp"
#include "io/system/posix_file.hpp"
#include "library_names.hpp"
#include "token_matching.hpp"
#include "transfer/model_pair.hpp"
#include "transfer/vocabulary_layout.hpp"

namespace clp_transfer {

/// One model as the transfer uses it.
struct loaded_model {
  hf_checkpoint checkpoint;
  std::string embedding_name;
  embedding_matrix embedding;  ///< the input embedding, #rows by hidden size
  /// The source's: every tensor with a row or value per token and its role (vocabulary_layout.hpp).
  vocabulary_plan plan;
  /// The source's tensors transferred with the embedding's weights (untied head, per-token
  /// biases, --transfer-tensor), each #rows by its values per token, in its own dtype.
  std::vector<transferred_tensor> transferred;
  /// The source's untied output head (one of `transferred`); nullopt when tied or absent.
  std::optional<std::string> head_name;
};

struct loaded_models {
  loaded_model source, helper;
  /// Which helper tokens take which source rows (token_matching.hpp).
  token_matching matching;
};

namespace detail {

/// A tensor's bytes in its shard, on a descriptor of its own (a duplicate of the shard's), so
/// that a thread may map them while the checkpoint that located them moves.
struct tensor_bytes {
  io::file_descriptor file;
  std::uint64_t offset = 0, size = 0;
};

/// The bytes of the tensors the transfer maps from one model: its input embedding (named by
/// `embedding`, else found), and for the source (`head`) the untied output head. Best effort:
/// what cannot be found or opened is left out, for the reads that follow to report.
inline std::vector<tensor_bytes> mapped_tensor_bytes(const std::filesystem::path& folder,
                                                     const io::model_weights& weights, const std::string& embedding,
                                                     const std::string* head) {
  std::vector<tensor_bytes> found;
  try {
    const std::vector<std::string> all = weights.tensor_names();
    std::vector<std::string> names{io::find_input_embedding(folder, all, embedding)};
    if (head)
      if (std::optional<std::string> name = io::find_output_embedding(folder, all, *head)) names.push_back(*name);
    for (const std::string& name : names) {
      const io::located_tensor at = weights.locate(name);
      io::file_descriptor file(::fcntl(at.file.descriptor(), F_DUPFD_CLOEXEC, 0));
      if (file.get() >= 0 && at.tensor.byte_size > 0)
        found.push_back({std::move(file), at.tensor.offset, at.tensor.byte_size});
    }
  } catch (const std::exception&) {
  }
  return found;
}

/// Maps each tensor's bytes with their pages populated, and unmaps them. A file's first mapping
/// costs time in proportion to its size, one mapping at a time however many threads map, and a
/// later mapping of the same pages little (examples/benchmarks/LOG.md measures it); started as
/// soon as the weights' headers are read, that cost is paid while the tokenizers are parsed
/// instead of after. Failures are ignored: the reads that follow map the same bytes.
inline void warm_pages(const std::vector<tensor_bytes>& tensors) noexcept {
  for (const tensor_bytes& tensor : tensors)
    io::mapped_bytes::populated(tensor.file.get(), tensor.offset, tensor.size);  // unmapped at once
}

/// The warm-ups (warm_pages) of both models, running while the models are read. They touch no
/// checkpoint (their descriptors are their own); their owner waits for them when it goes (a
/// std::async future's destructor does), so none outlives the read phase.
struct page_warming {
  std::future<void> source, helper;

  /// Starts warming `tensors` on a thread of its own, into `slot`; best effort.
  static void start(std::future<void>& slot, std::vector<tensor_bytes> tensors) noexcept {
    if (tensors.empty()) return;
    try {
      slot = std::async(std::launch::async, [tensors = std::move(tensors)] { warm_pages(tensors); });
    } catch (const std::exception&) {  // no thread: the reads map the pages unwarmed
    }
  }
};

/// Both models, the helper read on a thread of its own meanwhile, and each model's embeddings
/// warmed (page_warming) while its tokenizer is parsed. The source's error, when both fail, is
/// the one reported (the future's destructor waits for the helper first).
inline std::pair<hf_checkpoint, hf_checkpoint> read_checkpoints(const model_pair& pair, page_warming& warming) {
  std::future<hf_checkpoint> helper = std::async(std::launch::async, [&pair, &warming] {
    return hf_checkpoint::read(pair.helper, [&](const io::model_weights& weights) {
      page_warming::start(warming.helper, mapped_tensor_bytes(pair.helper, weights, pair.helper_embedding, nullptr));
    });
  });
  hf_checkpoint source = hf_checkpoint::read(pair.source, [&](const io::model_weights& weights) {
    page_warming::start(warming.source,
                        mapped_tensor_bytes(pair.source, weights, pair.source_embedding, &pair.source_head));
  });
  return {std::move(source), helper.get()};
}

struct tensor_names {
  std::string source, helper;
  std::optional<std::string> head;
};

inline tensor_names find_tensor_names(const model_pair& pair, const hf_checkpoint& source,
                                      const hf_checkpoint& helper) {
  const std::vector<std::string> source_names = source.weights.tensor_names();
  tensor_names names;
  names.source = io::find_input_embedding(pair.source, source_names, pair.source_embedding);
  names.head = io::find_output_embedding(pair.source, source_names, pair.source_head);
  names.helper = io::find_input_embedding(pair.helper, helper.weights.tensor_names(), pair.helper_embedding);
  return names;
}

/// Starts matching the vocabularies (match_models) with the embeddings' row counts from the
/// tensor headers. When a tensor is not 2-D none is started: its read fails first.
inline std::future<token_matching> start_matching(const hf_checkpoint& source, const hf_checkpoint& helper,
                                                  const tensor_names& names, const match_arguments& match) {
  const auto rows_in_header = [](const hf_checkpoint& model, const std::string& name) -> Index {
    const std::vector<std::int64_t>& shape = model.weights.locate(name).tensor.shape;
    return shape.size() == 2 ? shape[0] : -1;
  };
  const Index source_rows = rows_in_header(source, names.source);
  const Index helper_rows = rows_in_header(helper, names.helper);
  if (source_rows < 0 || helper_rows < 0) return {};
  return std::async(std::launch::async, [&source, &helper, match, source_rows, helper_rows] {
    return match_models(source, helper, match, source_rows, helper_rows);
  });
}

/// Both input embeddings, mapped at once: mapping fills the page tables of hundreds of MB each.
inline std::pair<embedding_matrix, embedding_matrix> map_embeddings(const hf_checkpoint& source,
                                                                    const hf_checkpoint& helper,
                                                                    const tensor_names& names) {
  auto helper_embedding =
      std::async(std::launch::async, [&] { return embedding_matrix::read(helper.weights, names.helper); });
  embedding_matrix source_embedding = embedding_matrix::read(source.weights, names.source);
  return {std::move(source_embedding), helper_embedding.get()};
}

/// Every token id must name a row of the embedding.
inline void require_ids_fit(const hf_checkpoint& model, const embedding_matrix& matrix) {
  for (const auto& [token, id] : model.tokenizer.vocabulary.ids)
    if (id >= matrix.rows())
      io::malformed(model.tokenizer.file, "token " + io::quoted_name(token) + " has id " + std::to_string(id) +
                                              ", past the " + std::to_string(matrix.rows()) + " rows of " +
                                              matrix.description());
}

/// config.json's hidden size must be the embedding's width.
inline void require_hidden_size(const hf_checkpoint& model, const embedding_matrix& matrix) {
  const std::int64_t hidden = language_model_hidden_size(model.config(), model.config_file());
  if (hidden != matrix.cols())
    io::malformed(model.config_file(), "hidden size " + std::to_string(hidden) + " does not fit " +
                                           matrix.description() + " with " + std::to_string(matrix.cols()) +
                                           " columns");
}

}  // namespace detail

/// Reads both models of `pair`: the two folders at once, then the two embeddings at once while
/// the vocabularies are matched, then the source's tensors that follow the vocabulary
/// (vocabulary_layout.hpp). The parts of each model must fit together: config.json and the
/// embedding's width, the token ids and the embedding's rows. Throws naming the file at fault;
/// of several faults, the first in the order of the checks.
inline loaded_models read_models(const model_pair& pair) {
  detail::page_warming warming;  // declared first, so waited for last, however this returns
  auto [source, helper] = detail::read_checkpoints(pair, warming);
  const detail::tensor_names names = detail::find_tensor_names(pair, source, helper);
  std::future<token_matching> matching = detail::start_matching(source, helper, names, pair.matching);
  auto [source_embedding, helper_embedding] = detail::map_embeddings(source, helper, names);
  vocabulary_plan plan = plan_source_tensors(pair.transfer_tensors, source, source_embedding, names.source, names.head);
  std::vector<transferred_tensor> transferred = read_transferred(source.weights, plan, source_embedding.rows());
  detail::require_hidden_size(source, source_embedding);
  detail::require_hidden_size(helper, helper_embedding);
  detail::require_ids_fit(source, source_embedding);
  detail::require_ids_fit(helper, helper_embedding);
  token_matching matched = matching.get();  // before the models move: the matching reads them
  std::optional<std::string> head;
  for (const transferred_tensor& t : transferred)
    if (names.head && t.entry.name == *names.head) head = t.entry.name;
  return {{std::move(source), names.source, std::move(source_embedding), std::move(plan), std::move(transferred),
           std::move(head)},
          {std::move(helper), names.helper, std::move(helper_embedding), {}, {}, {}},
          std::move(matched)};
}

}  // namespace clp_transfer
