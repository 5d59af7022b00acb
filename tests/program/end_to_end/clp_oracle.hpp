// The expected output of a CLP-Transfer of a fixture pair: the overlap by token string, found
// here from the fixtures' token lists, and the rows from the test suites' one double-precision
// oracle (tests/support/oracle.hpp: the paper's formulas, no code shared with the library),
// applied to the embedding and to an untied head.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "model_fixtures.hpp"
#include "support/oracle.hpp"

namespace program_test {

/// A --weighting choice and the options it takes.
struct weighting_choice {
  std::string name;
  std::int64_t k = 10;
  double temperature = 0.1;
  double lambda = -1;                    ///< least-squares: --lambda when not negative
  std::string row_norms = "top-k-mean";  ///< least-squares: --row-norms (the program's default)

  /// The options, each only where the weighting reads it (the program refuses the others).
  std::vector<std::string> arguments() const {
    std::vector<std::string> a{"--weighting", name};
    const bool map = name == "least-squares";
    if (name == "top-k" || name == "softmax" || name == "omp" || (map && row_norms != "map"))
      a.insert(a.end(), {"--k", std::to_string(k)});
    if (name == "softmax") a.insert(a.end(), {"--temperature", std::to_string(temperature)});
    if (map) a.insert(a.end(), {"--row-norms", row_norms});
    if (map && lambda >= 0) a.insert(a.end(), {"--lambda", std::to_string(lambda)});
    return a;
  }
};

/// The predicted target rows.
struct oracle_rows {
  matrix embedding;                     ///< #helper rows by source width
  matrix head;                          ///< the same for the untied head; empty when tied
  std::vector<bool> copied;             ///< target rows that copy a source row (eq. 2)
  std::vector<bool> ambiguous;          ///< rows whose k-th and (k+1)-th cosines nearly tie (top-k, softmax)
  std::vector<std::int64_t> source_of;  ///< for copied rows, the source row
  std::int64_t overlap = 0, degenerate = 0;
  /// The embedding's missing rows (padding included: the oracle cannot tell it) whose best cosine
  /// is not positive, whose cosine sum is negative, and whose weights' absolute values add up to
  /// more than 2; not set for least-squares.
  std::int64_t no_positive = 0, negative_sum = 0, inflated = 0;
};

namespace detail {

inline oracle::policy policy_of(const weighting_choice& choice) {
  oracle::policy p;
  p.k = choice.k;
  p.temperature = choice.temperature;
  if (choice.name == "paper")
    p.which = oracle::kind::paper;
  else if (choice.name == "clamped")
    p.which = oracle::kind::clamped;
  else if (choice.name == "top-k")
    p.which = oracle::kind::top_k;
  else if (choice.name == "softmax")
    p.which = oracle::kind::softmax;
  else if (choice.name == "sparsemax")
    p.which = oracle::kind::sparsemax;
  else if (choice.name == "paper-guarded")
    p.which = oracle::kind::paper_guarded;
  else if (choice.name == "omp")
    p.which = oracle::kind::omp;
  else
    throw std::logic_error("oracle: weighting " + choice.name);
  return p;
}

inline oracle::matrix to_oracle(const matrix& m) {
  oracle::matrix out(m.rows, m.cols);
  out.values = m.values;
  return out;
}

inline matrix from_oracle(const oracle::matrix& m) {
  matrix out(m.rows, m.cols);
  out.values = m.values;
  return out;
}

}  // namespace detail

/// What `clp-transfer transfer --method clp` should write for `pair` with `choice`.
inline oracle_rows clp_oracle(const model_pair& pair, const weighting_choice& choice) {
  const model_fixture& source = pair.source;
  const model_fixture& helper = pair.helper;
  const std::int64_t rows = helper.embedding.rows;

  std::unordered_map<std::string, std::int64_t> source_id;
  for (std::size_t id = 0; id < source.tokens.size(); ++id) source_id.emplace(source.tokens[id], std::int64_t(id));

  oracle_rows out;
  out.copied.assign(std::size_t(rows), false);
  out.ambiguous.assign(std::size_t(rows), false);
  out.source_of.assign(std::size_t(rows), -1);
  std::vector<oracle::index> overlap_target, overlap_source, missing;  // ascending target id
  for (std::int64_t t = 0; t < rows; ++t) {
    const auto hit =
        t < std::int64_t(helper.tokens.size()) ? source_id.find(helper.tokens[std::size_t(t)]) : source_id.end();
    if (hit == source_id.end()) {
      missing.push_back(t);  // also the helper's padding rows past its vocabulary
      continue;
    }
    overlap_target.push_back(t);
    overlap_source.push_back(hit->second);
    out.copied[std::size_t(t)] = true;
    out.source_of[std::size_t(t)] = hit->second;
  }
  out.overlap = std::int64_t(overlap_target.size());

  // Near ties of the k-th cosine closer than this may go either way in float32.
  constexpr double ambiguity = 1e-5;
  const oracle::matrix helper_rows = detail::to_oracle(helper.embedding);
  if (choice.name == "least-squares") {
    // The map by the normal equations in double; a zero helper row falls back to the mean. With
    // top-k row norms each mapped row takes the norm of its top-k row (the oracle's, in double);
    // with top-k-mean, its top-k weights applied to the source rows' norms (top-k's row of a
    // one-column source holding each row's norm).
    const double lambda = choice.lambda * oracle::mean_eigenvalue(helper_rows, overlap_target);
    oracle::policy nearest;
    nearest.which = oracle::kind::top_k;
    nearest.k = choice.k;
    const bool top_k_norms = choice.row_norms != "map";
    const bool mean_norms = choice.row_norms == "top-k-mean";
    const auto map = [&](const matrix& from) {
      const oracle::matrix source_rows = detail::to_oracle(from);
      oracle::matrix w;
      if (!oracle::least_squares_map(helper_rows, overlap_target, source_rows, overlap_source, lambda, w))
        throw std::logic_error("oracle: singular normal equations");
      const oracle::matrix mapped = oracle::apply_map(helper_rows, missing, w);
      const std::vector<double> mean = oracle::mean_row(source_rows, overlap_source);
      matrix result(rows, from.cols);
      for (std::size_t i = 0; i < overlap_target.size(); ++i)
        for (std::int64_t c = 0; c < from.cols; ++c)
          result.values[std::size_t(overlap_target[i] * from.cols + c)] = source_rows(overlap_source[i], c);
      oracle::result neighbours;
      oracle::matrix norms(source_rows.rows, 1);
      for (oracle::index r = 0; r < source_rows.rows; ++r) norms(r, 0) = oracle::norm(source_rows.row(r), from.cols);
      if (top_k_norms) {
        neighbours = oracle::synthesize(helper_rows, overlap_target, overlap_source, missing,
                                        mean_norms ? norms : source_rows, nearest, ambiguity);
        for (oracle::index t : neighbours.ambiguous) out.ambiguous[std::size_t(t)] = true;
      }
      for (std::size_t i = 0; i < missing.size(); ++i) {
        const bool zero = oracle::norm(helper_rows.row(missing[i]), helper_rows.cols) == 0;
        double scale = 1;
        if (top_k_norms && !zero)
          scale = (mean_norms ? neighbours.output(missing[i], 0)
                              : oracle::norm(neighbours.output.row(missing[i]), from.cols)) /
                  oracle::norm(mapped.row(oracle::index(i)), from.cols);
        for (std::int64_t c = 0; c < from.cols; ++c)
          result.values[std::size_t(missing[i] * from.cols + c)] =
              zero ? mean[std::size_t(c)] : scale * mapped(oracle::index(i), c);
      }
      return result;
    };
    out.embedding = map(source.embedding);
    if (!source.head_name.empty()) out.head = map(source.head);
    return out;
  }
  const auto synthesize = [&](const matrix& from) {
    return oracle::synthesize(helper_rows, overlap_target, overlap_source, missing, detail::to_oracle(from),
                              detail::policy_of(choice), ambiguity);
  };
  const oracle::result embedding = synthesize(source.embedding);
  out.embedding = detail::from_oracle(embedding.output);
  out.degenerate = embedding.zero_norm_rows + embedding.fallback_rows;
  out.no_positive = embedding.no_positive_rows;
  out.negative_sum = embedding.negative_sum_rows;
  out.inflated = embedding.inflated_rows;
  for (oracle::index t : embedding.ambiguous) out.ambiguous[std::size_t(t)] = true;
  if (!source.head_name.empty()) out.head = detail::from_oracle(synthesize(source.head).output);
  return out;
}

}  // namespace program_test
