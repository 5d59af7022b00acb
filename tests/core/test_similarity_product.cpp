// SPDX-License-Identifier: MIT
// clp/similarity_product.hpp: a caller's product of lower precision, its candidates rescored in
// float32, against a double oracle; an emulated bf16 product (inputs rounded to bf16, a plain
// float loop) stands in for the hardware's.

#include "fixtures.hpp"

#include <clp/detail/synthesis/rescoring.hpp>

#include <atomic>
#include <memory>
#include <random>
#include <set>

// A namespace of its own: the test targets are unity builds (cmake/ClpProjectOptions.cmake).
namespace test_similarity_product {
namespace {

using clp::Index;
using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// q~ . n~ in float32 with q~, n~ the rows rounded to bfloat16, summed in order; the bound of
/// clp::bf16_cosine_bound from the rows' own norms and residuals, or `forced_bound` when >= 0.
class emulated_bf16 final : public clp::similarity_product {
 public:
  explicit emulated_bf16(double forced_bound = -1) : forced_bound_(forced_bound) {}
  std::string name() const override { return "emulated bf16"; }
  mutable std::atomic<int> prepared{0};

  struct ready final : clp::prepared_similarity {
    row_major rounded;  // n_overlap x d, bf16 values widened
    double n_norm = 0, n_residual = 0, forced = -1;
    void multiply(const float* queries, Index rows, float* cosines, float* bound, int) const override {
      const Index n = rounded.rows(), d = rounded.cols();
      std::vector<float> q(static_cast<std::size_t>(d));
      for (Index i = 0; i < rows; ++i) {
        const float* row = queries + i * d;
        for (Index c = 0; c < d; ++c) q[std::size_t(c)] = float(Eigen::bfloat16(row[c]));
        for (Index j = 0; j < n; ++j) {
          float sum = 0;
          for (Index c = 0; c < d; ++c) sum += q[std::size_t(c)] * rounded(j, c);
          cosines[i * n + j] = sum;
        }
        const double q_norm = clp::detail::row_norm(row, d);
        bound[i] = forced >= 0
                       ? float(forced)
                       : clp::bf16_cosine_bound(q_norm, clp::bf16_rounding_residual(row, d), n_norm, n_residual, d);
      }
    }
  };

  std::unique_ptr<clp::prepared_similarity> prepare(const float* rows, Index n, Index d, Index, int) const override {
    ++prepared;
    auto p = std::make_unique<ready>();
    p->forced = forced_bound_;
    p->rounded.resize(n, d);
    for (Index j = 0; j < n; ++j) {
      for (Index c = 0; c < d; ++c) p->rounded(j, c) = float(Eigen::bfloat16(rows[j * d + c]));
      p->n_norm = std::max(p->n_norm, clp::detail::row_norm(rows + j * d, d));
      p->n_residual = std::max(p->n_residual, clp::bf16_rounding_residual(rows + j * d, d));
    }
    return p;
  }

 private:
  double forced_bound_;
};

/// The float32 path's own arithmetic (form_cosines: panels of 512 overlap rows, row-major
/// products) behind the customisation point, bound 0.
class float32_panels final : public clp::similarity_product {
 public:
  std::string name() const override { return "float32 panels"; }
  struct ready final : clp::prepared_similarity {
    row_major rows;
    void multiply(const float* queries, Index m, float* cosines, float* bound, int) const override {
      const Index n = rows.rows(), d = rows.cols();
      const clp::detail::const_matrix_map q(queries, m, d);
      for (Index p0 = 0; p0 < n; p0 += clp::detail::panel_rows) {
        const Index pn = std::min(clp::detail::panel_rows, n - p0);
        clp::detail::strided_map(cosines + p0, m, pn, Eigen::OuterStride<>(n)).noalias() =
            q * clp::detail::const_matrix_map(rows.data() + p0 * d, pn, d).transpose();
      }
      std::fill(bound, bound + m, 0.0f);
    }
  };
  std::unique_ptr<clp::prepared_similarity> prepare(const float* rows, Index n, Index d, Index, int) const override {
    auto p = std::make_unique<ready>();
    p->rows = clp::detail::const_matrix_map(rows, n, d);
    return p;
  }
};

/// Helper rows in tight clusters (cosines within bf16's error of each other, so bf16 alone
/// reorders neighbours), the source the identity over the overlap: an output row shows the
/// weight of every overlap position.
struct problem {
  row_major helper, source;
  clp::vocabulary_overlap overlap;
};

problem clustered(Index n_overlap, Index n_missing, Index d, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<float> normal;
  const Index clusters = 8, rows = n_overlap + n_missing;
  row_major centres(clusters, d);
  for (Index i = 0; i < centres.size(); ++i) centres.data()[i] = normal(random);
  problem p;
  p.helper.resize(rows, d);
  for (Index r = 0; r < rows; ++r)
    for (Index c = 0; c < d; ++c) p.helper(r, c) = centres(r % clusters, c) + 0.02f * normal(random);
  std::vector<Index> target, source;
  for (Index i = 0; i < n_overlap; ++i) target.push_back(i * rows / n_overlap), source.push_back(i);
  p.overlap = fixtures::make_overlap(target, source, rows, n_overlap);
  p.source = row_major::Identity(n_overlap, n_overlap);
  return p;
}

/// The float32 rows as the engine normalises them (norm in double, times the float inverse).
row_major normalised(const row_major& helper) {
  row_major out = helper;
  for (Index r = 0; r < out.rows(); ++r) {
    const double norm = clp::detail::row_norm(out.row(r).data(), out.cols());
    if (norm > 0) out.row(r) *= static_cast<float>(1.0 / norm);
  }
  return out;
}

/// The oracle: each missing row's k overlap positions by the exact dot of the normalised float32
/// rows rounded once to float32 (what rescoring computes), larger first, then lower position.
std::vector<std::set<Index>> oracle_neighbours(const problem& p, Index k) {
  const row_major h = normalised(p.helper);
  std::vector<std::set<Index>> result;
  for (Index t : p.overlap.missing_ids) {
    std::vector<std::pair<float, Index>> scored;
    for (Index j = 0; j < Index(p.overlap.size()); ++j) {
      long double dot = 0;
      for (Index c = 0; c < h.cols(); ++c)
        dot += (long double)h(t, c) * (long double)h(p.overlap.target_ids[std::size_t(j)], c);
      scored.push_back({float(dot), j});
    }
    std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    std::set<Index> top;
    for (Index r = 0; r < k; ++r) top.insert(scored[std::size_t(r)].second);
    result.push_back(top);
  }
  return result;
}

/// The overlap positions an output row gives weight to.
std::set<Index> chosen(const row_major& out, Index t) {
  std::set<Index> s;
  for (Index j = 0; j < out.cols(); ++j)
    if (out(t, j) != 0) s.insert(j);
  return s;
}

row_major run(const problem& p, const clp::weighting& policy, std::shared_ptr<const clp::similarity_product> product,
              int threads = 1, std::size_t tile = clp::default_tile_bytes, clp::synthesis_report* report = nullptr) {
  row_major out = row_major::Zero(p.helper.rows(), p.source.cols());
  clp::synthesis_options options = fixtures::options(threads, tile);
  options.product = std::move(product);
  const clp::synthesis_report r = clp::synthesize_rows(p.source, p.helper, p.overlap, out, policy, options);
  if (report) *report = r;
  return out;
}

}  // namespace

TEST_CASE("similarity_product: bf16-emulated candidates rescored give the oracle's neighbours on every row") {
  const problem p = clustered(700, 300, 64, 5);
  const Index k = 10;
  const auto want = oracle_neighbours(p, k);
  auto product = std::make_shared<emulated_bf16>();
  clp::synthesis_report report;
  const row_major out = run(p, clp::softmax_weights{k, 0.1f}, product, 2, clp::default_tile_bytes, &report);
  Index differs = 0;
  for (std::size_t i = 0; i < want.size(); ++i) differs += chosen(out, p.overlap.missing_ids[i]) != want[i];
  CHECK(differs == 0);
  CHECK(report.similarity_product == "emulated bf16");
  CHECK(report.rescored_rows == 300);
  CHECK(report.rescored_candidates > 300 * k);
  CHECK(report.rescored_candidates < 300 * 700);
  CHECK(product->prepared == 1);

  // The test can tell: bf16 cosines alone, without rescoring, choose other neighbours on some rows.
  const row_major unrescored = run(p, clp::softmax_weights{k, 0.1f}, std::make_shared<emulated_bf16>(0.0));
  Index bf16_alone = 0;
  for (std::size_t i = 0; i < want.size(); ++i) bf16_alone += chosen(unrescored, p.overlap.missing_ids[i]) != want[i];
  MESSAGE("bf16 alone changes the neighbours of " << bf16_alone << " of 300 rows; rescored: " << differs);
  CHECK(bf16_alone > 0);
}

TEST_CASE("similarity_product: the product's top k rescored first narrow the window, the neighbours unchanged") {
  // Rows spread as real embeddings are (not in clusters tighter than the bound): the first
  // pass keeps T - 2 (b + e), the rescored top k cut at R - (b + e).
  problem p;
  std::mt19937_64 random(17);
  std::normal_distribution<float> normal;
  const Index n_overlap = 3000, n_missing = 200, d = 32, k = 10;
  p.helper.resize(n_overlap + n_missing, d);
  for (Index i = 0; i < p.helper.size(); ++i) p.helper.data()[i] = normal(random);
  std::vector<Index> target(static_cast<std::size_t>(n_overlap)), source(target.size());
  for (Index i = 0; i < n_overlap; ++i) target[std::size_t(i)] = source[std::size_t(i)] = i;
  p.overlap = fixtures::make_overlap(target, source, n_overlap + n_missing, n_overlap);
  p.source = row_major::Identity(n_overlap, n_overlap);
  auto product = std::make_shared<emulated_bf16>();
  clp::synthesis_report report;
  const row_major out = run(p, clp::top_k_weights{k}, product, 2, clp::default_tile_bytes, &report);
  const auto want = oracle_neighbours(p, k);
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(chosen(out, p.overlap.missing_ids[i]) == want[i]);

  // The first pass alone, row by row through the same product.
  const row_major h = normalised(p.helper);
  row_major overlap_rows(n_overlap, d), query(1, d);
  for (Index j = 0; j < n_overlap; ++j) overlap_rows.row(j) = h.row(p.overlap.target_ids[std::size_t(j)]);
  const auto ready = product->prepare(overlap_rows.data(), n_overlap, d, 1, 1);
  std::vector<float> cosines(static_cast<std::size_t>(n_overlap));
  clp::detail::rescoring_scratch s;
  Index first_pass = 0;
  for (Index t : p.overlap.missing_ids) {
    query.row(0) = h.row(t);
    float bound = 0;
    ready->multiply(query.data(), 1, cosines.data(), &bound, 0);
    double sum = 0;
    first_pass += clp::detail::collect_candidates(cosines.data(), n_overlap, k,
                                                  double(bound) + clp::detail::rescoring_error(d), s, sum);
  }
  MESSAGE("rescored " << report.rescored_candidates << " candidates; the first pass alone keeps " << first_pass);
  CHECK(report.rescored_candidates >= n_missing * k);
  CHECK(report.rescored_candidates < first_pass);
}

TEST_CASE(
    "similarity_product: the float32 path's arithmetic behind the point, bound 0, is the float32 path bit for bit") {
  const problem p = clustered(1100, 500, 48, 7);
  for (const clp::weighting& policy :
       {clp::weighting{clp::top_k_weights{10}}, clp::weighting{clp::softmax_weights{5, 0.1f}}}) {
    clp::synthesis_report report;
    const row_major plain = run(p, policy, nullptr, 2, 1 << 20);
    const row_major through = run(p, policy, std::make_shared<float32_panels>(), 2, 1 << 20, &report);
    CHECK(fixtures::same_bits(plain, through));
    CHECK(report.rescored_rows == 0);
    CHECK(report.similarity_product == "float32 panels");
  }
}

TEST_CASE("similarity_product: a bound wider than every gap rescores every candidate, and still matches the oracle") {
  const problem p = clustered(300, 100, 32, 9);
  clp::synthesis_report report;
  const row_major out =
      run(p, clp::softmax_weights{7, 0.1f}, std::make_shared<emulated_bf16>(4.0), 1, clp::default_tile_bytes, &report);
  const auto want = oracle_neighbours(p, 7);
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(chosen(out, p.overlap.missing_ids[i]) == want[i]);
  CHECK(report.rescored_rows == 100);
  CHECK(report.rescored_candidates == 100 * 300);
}

TEST_CASE("similarity_product: bit-identical for 1, 2 and 3 threads and any tile budget") {
  const problem p = clustered(900, 400, 40, 11);
  const auto product = std::make_shared<emulated_bf16>();
  const row_major first = run(p, clp::top_k_weights{10}, product, 1, 1 << 20);
  for (int threads : {2, 3})
    for (std::size_t tile : {std::size_t(1) << 19, std::size_t(1) << 22, clp::default_tile_bytes})
      CHECK(fixtures::same_bits(first, run(p, clp::top_k_weights{10}, product, threads, tile)));
}

/// emulated_bf16, counting the blocks it has multiplied.
class counted_bf16 final : public clp::similarity_product {
 public:
  std::string name() const override { return "counted emulated bf16"; }
  mutable std::atomic<int> multiplied{0};
  struct ready final : clp::prepared_similarity {
    std::unique_ptr<clp::prepared_similarity> inner;
    std::atomic<int>* multiplied = nullptr;
    void multiply(const float* queries, Index rows, float* cosines, float* bound, int worker) const override {
      inner->multiply(queries, rows, cosines, bound, worker);
      ++*multiplied;
    }
  };
  std::unique_ptr<clp::prepared_similarity> prepare(const float* rows, Index n, Index d, Index block,
                                                    int threads) const override {
    auto p = std::make_unique<ready>();
    p->inner = emulated_bf16().prepare(rows, n, d, block, threads);
    p->multiplied = &multiplied;
    return p;
  }
};

TEST_CASE("similarity_product: rows_started comes when a block is about to write, after its product") {
  // A caller that moves memory into the rows above `end` (clp-transfer) has the blocks' whole
  // products to do it in: on one thread, block b's call comes after its own product, b + 1 of
  // them; a call at the block's start would come after b.
  const problem p = clustered(600, 500, 16, 17);
  const auto product = std::make_shared<counted_bf16>();
  row_major out = row_major::Zero(p.helper.rows(), p.source.cols());
  clp::synthesis_options options = fixtures::options(1, 64 << 10);
  options.product = product;
  std::vector<int> multiplied_at;
  options.rows_started = [&](Index) { multiplied_at.push_back(product->multiplied.load()); };
  clp::synthesize_rows(p.source, p.helper, p.overlap, out, clp::top_k_weights{10}, options);
  REQUIRE(multiplied_at.size() >= 3);
  for (std::size_t b = 0; b < multiplied_at.size(); ++b) CHECK(multiplied_at[b] == int(b) + 1);
  CHECK(fixtures::same_bits(out, run(p, clp::top_k_weights{10}, std::make_shared<emulated_bf16>(), 1, 64 << 10)));
}

TEST_CASE("similarity_product: weightings without neighbour lists ignore the product") {
  const problem p = clustered(200, 50, 16, 13);
  for (const clp::weighting& policy :
       {clp::weighting{clp::paper_weights{}}, clp::weighting{clp::sparsemax_weights{}}}) {
    clp::synthesis_report report;
    const row_major through = run(p, policy, std::make_shared<emulated_bf16>(), 1, clp::default_tile_bytes, &report);
    CHECK(fixtures::same_bits(run(p, policy, nullptr), through));
    CHECK(report.similarity_product == "float32");
  }
}

TEST_CASE("similarity_product: in a pass of several jobs it serves only when every job reads neighbour lists") {
  const problem p = clustered(700, 500, 24, 31);
  const auto product = std::make_shared<emulated_bf16>();
  clp::synthesis_options with = fixtures::options(2, 1 << 20);
  with.product = product;
  const clp::synthesis_options without = fixtures::options(2, 1 << 20);
  const auto run_pass = [&](const std::vector<clp::weighting>& weightings, const clp::synthesis_options& options,
                            const clp::synthesis_options& alone_options, const std::string& name) {
    std::vector<row_major> outputs(weightings.size(), row_major::Zero(p.helper.rows(), p.source.cols()));
    std::vector<clp::synthesis_job> jobs;
    for (std::size_t j = 0; j < weightings.size(); ++j) jobs.emplace_back(weightings[j], p.source, outputs[j]);
    const int before = product->prepared;
    const auto reports = clp::synthesize_each(p.helper, p.overlap, jobs, options);
    CHECK(product->prepared - before == (name == "emulated bf16" ? 1 : 0));  // made ready once for the pass
    for (std::size_t j = 0; j < weightings.size(); ++j) {
      CAPTURE(fixtures::name_of(weightings[j]));
      row_major alone = row_major::Zero(p.helper.rows(), p.source.cols());
      const auto own = clp::synthesize_rows(p.source, p.helper, p.overlap, alone, weightings[j], alone_options);
      CHECK(fixtures::same_bits(outputs[j], alone));
      CHECK(reports[j].rescored_rows == own.rescored_rows);
      CHECK(reports[j].rescored_candidates == own.rescored_candidates);
      if (std::holds_alternative<clp::top_k_weights>(weightings[j]) ||
          std::holds_alternative<clp::softmax_weights>(weightings[j]))
        CHECK(reports[j].similarity_product == name);
    }
  };
  // Neighbour lists only (top-k at two k, softmax, the map's top-k row norms): the product
  // forms the pass's cosines, each job rescoring its own candidates.
  run_pass({clp::top_k_weights{5}, clp::softmax_weights{7, 0.1f}, clp::least_squares_map{}, clp::top_k_weights{12}},
           with, with, "emulated bf16");
  // With a weighting that reads whole rows, the float32 product serves every job.
  run_pass({clp::top_k_weights{5}, clp::paper_weights{}, clp::least_squares_map{}}, with, without, "float32");
}

TEST_CASE("similarity_product: a candidate exactly at the cut is kept, one just below it is not") {
  clp::detail::rescoring_scratch s;
  // k = 2: the 2nd largest is 0.5; margin 0.125 puts the cut at exactly 0.25.
  const float cosines[] = {0.9f, 0.25f, 0.5f, std::nextafter(0.25f, 0.0f), 0.3f, -1.0f};
  double sum = 0;
  const Index count = clp::detail::collect_candidates(cosines, 6, 2, 0.125, s, sum);
  CHECK(std::vector<Index>(s.candidate.data(), s.candidate.data() + count) == std::vector<Index>{0, 1, 2, 4});
  CHECK(sum == doctest::Approx(0.9 + 0.25 + 0.5 + 0.25 + 0.3 - 1.0));
  // Every one within the bound: all are candidates.
  CHECK(clp::detail::collect_candidates(cosines, 6, 2, 1.0, s, sum) == 6);
  // Past one chunk of 64: the running cut drops nothing that the final cut keeps.
  std::vector<float> row(1000);
  for (std::size_t j = 0; j < row.size(); ++j) row[j] = float(std::sin(double(j) * 0.37));
  const Index many = clp::detail::collect_candidates(row.data(), 1000, 10, 0.01, s, sum);
  std::vector<float> sorted = row;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  Index want = 0;
  for (float v : row) want += double(v) >= double(sorted[9]) - 0.02;
  CHECK(many == want);
}

TEST_CASE("similarity_product: the candidate pass against a sort of the whole row, wherever the top k sit") {
  // The pass reads again only the chunks whose largest cosine reaches a lower bound of the k-th
  // largest; the bound is loose where the top k crowd into one chunk, and absent where the row
  // has fewer than k chunks. Whatever it is, the candidates and the top k must be a full sort's.
  std::mt19937 random(23);
  std::normal_distribution<float> normal(0.05f, 0.1f);
  clp::detail::rescoring_scratch s;
  const auto check_row = [&](const std::vector<float>& row, Index k, double margin) {
    const Index n = Index(row.size());
    double sum = 0;
    const Index count = clp::detail::collect_candidates(row.data(), n, k, margin, s, sum);
    std::vector<clp::detail::scored_row> ranked;
    for (Index j = 0; j < n; ++j) ranked.push_back({row[std::size_t(j)], j});
    std::sort(ranked.begin(), ranked.end(), clp::detail::ranks_before{});
    std::vector<Index> want_top, got_top;
    for (Index r = 0; r < k; ++r) want_top.push_back(ranked[std::size_t(r)].id);
    for (Index r = 0; r < k; ++r) got_top.push_back(s.heap.data()[r].id);
    std::sort(want_top.begin(), want_top.end());
    std::sort(got_top.begin(), got_top.end());
    CHECK(got_top == want_top);
    std::vector<Index> want;
    const double cut = double(ranked[std::size_t(k - 1)].cosine) - 2 * margin;
    double want_sum = 0;
    for (Index j = 0; j < n; ++j) {
      if (double(row[std::size_t(j)]) >= cut) want.push_back(j);
      want_sum += double(row[std::size_t(j)]);
    }
    CHECK(std::vector<Index>(s.candidate.data(), s.candidate.data() + count) == want);
    CHECK(sum == doctest::Approx(want_sum).epsilon(1e-12));
  };
  for (Index n : {Index(9), Index(100), Index(640), Index(1000), Index(5003)}) {
    std::vector<float> row(static_cast<std::size_t>(n));
    for (float& v : row) v = normal(random);
    for (Index k : {Index(1), Index(3), Index(10)}) {
      if (k > n) continue;
      check_row(row, k, 0.002);
      check_row(row, k, 0.0);
      // The top k crowded into the row's last (perhaps partial) chunk.
      std::vector<float> crowded = row;
      for (Index r = 0; r < k && r < 64; ++r) crowded[std::size_t(n - 1 - r)] = 0.9f + 0.001f * float(r);
      check_row(crowded, k, 0.002);
      // Every cosine equal: all tie, the k lowest positions are the top k.
      check_row(std::vector<float>(row.size(), 0.25f), k, 0.0);
    }
  }
}

TEST_CASE("similarity_product: ties among rescored cosines go to the lower overlap position, as in float32") {
  // Exact helper rows, so cosines tie exactly: overlap rows e0, e1, e0, e0, e2, (1,1,1,1);
  // missing rows e0 and e3 (the tie case of test_synthesize.cpp).
  problem p;
  p.helper = row_major::Zero(8, 4);
  const int ones[][2] = {{0, 0}, {1, 1}, {2, 0}, {3, 0}, {4, 2}, {6, 0}, {7, 3}};
  for (const auto& [r, c] : ones) p.helper(r, c) = 1;
  p.helper.row(5).setOnes();
  p.source = row_major::Identity(6, 6);
  p.overlap = fixtures::make_overlap({0, 1, 2, 3, 4, 5}, {0, 1, 2, 3, 4, 5}, 8, 6);
  for (const clp::weighting& policy :
       {clp::weighting{clp::top_k_weights{2}}, clp::weighting{clp::top_k_weights{4}},
        clp::weighting{clp::softmax_weights{3, 1e6f}}, clp::weighting{clp::top_k_weights{50}}}) {
    clp::synthesis_report report;
    const row_major through = run(p, policy, std::make_shared<emulated_bf16>(), 1, clp::default_tile_bytes, &report);
    CHECK(report.rescored_rows == 2);
    CHECK(fixtures::same_bits(run(p, policy, nullptr), through));
  }
}

TEST_CASE("bf16_cosine_bound: holds for bf16-rounded unit rows against the double dot") {
  std::mt19937_64 random(3);
  std::normal_distribution<float> normal;
  const Index d = 1024;
  const row_major rows = normalised(row_major::NullaryExpr(64, d, [&]() { return normal(random); }));
  double worst = 0;
  for (Index a = 0; a < rows.rows(); ++a)
    for (Index b = 0; b < rows.rows(); ++b) {
      float sum = 0;
      long double exact = 0;
      for (Index c = 0; c < d; ++c) {
        sum += float(Eigen::bfloat16(rows(a, c))) * float(Eigen::bfloat16(rows(b, c)));
        exact += (long double)rows(a, c) * rows(b, c);
      }
      const float bound = clp::bf16_cosine_bound(
          clp::detail::row_norm(rows.row(a).data(), d), clp::bf16_rounding_residual(rows.row(a).data(), d),
          clp::detail::row_norm(rows.row(b).data(), d), clp::bf16_rounding_residual(rows.row(b).data(), d), d);
      CHECK(std::abs(double(sum) - double(exact)) <= bound);
      worst = std::max(worst, double(bound));
    }
  CHECK(worst < 3.97e-3);  // the documented worst case for unit rows, d = 1024
}

}  // namespace test_similarity_product
