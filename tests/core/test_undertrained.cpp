// SPDX-License-Identifier: MIT
// clp::find_undertrained_rows and clp::without_source_rows (<clp/undertrained.hpp>): the
// indicators against a plain double-precision oracle written here (loops, the first principal
// component by power iteration on the covariance matrix), over every layout and element type;
// the planted case (shrunk rows and a collapsed group, no unused ids); the shipped models.
#include "fixtures.hpp"
#include "support/skip.hpp"

#include <clp/undertrained.hpp>

#include <Eigen/Eigenvalues>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

TYPE_TO_STRING(fixtures::raw_buffer<Eigen::half>);

// Everything here in a namespace of its own: the core tests are compiled as unity builds.
namespace undertrained_cases {

using clp::Index;

/// Standard normal numbers from a fixed engine (Box-Muller, so the same on every library).
struct normal_numbers {
  std::mt19937_64 engine;
  explicit normal_numbers(std::uint64_t seed) : engine(seed) {}
  double uniform() { return double(engine() >> 11) * (1.0 / 9007199254740992.0); }
  double operator()() { return std::sqrt(-2 * std::log(1 - uniform())) * std::cos(6.283185307179586 * uniform()); }
};

/// Rows like trained embeddings: a common offset, a spread that falls off as 1 / sqrt(1 + k)
/// along the axes of a random rotation (the first `leading` times wider), and norms that vary
/// by a log-normal factor. One extra row at the end, from the same distribution, for planting.
oracle::matrix trained_like(Index rows, Index cols, std::uint64_t seed, double leading = 1) {
  normal_numbers z(seed);
  std::vector<double> offset(static_cast<std::size_t>(cols)), scale(static_cast<std::size_t>(cols));
  for (Index c = 0; c < cols; ++c) {
    offset[std::size_t(c)] = 0.05 * z();
    scale[std::size_t(c)] = (c == 0 ? leading : 1.0) * 0.15 / std::sqrt(1.0 + double(c));
  }
  oracle::matrix basis(cols, cols);  // Gram-Schmidt of normal vectors: a random rotation
  for (Index k = 0; k < cols; ++k) {
    for (Index c = 0; c < cols; ++c) basis(k, c) = z();
    for (Index j = 0; j < k; ++j) {
      const double along = oracle::dot(basis.row(k), basis.row(j), cols);
      for (Index c = 0; c < cols; ++c) basis(k, c) -= along * basis(j, c);
    }
    const double norm = oracle::norm(basis.row(k), cols);
    for (Index c = 0; c < cols; ++c) basis(k, c) /= norm;
  }
  oracle::matrix m(rows + 1, cols);
  for (Index r = 0; r <= rows; ++r) {
    const double size = std::exp(0.2 * z());
    for (Index c = 0; c < cols; ++c) m(r, c) = offset[std::size_t(c)];
    for (Index k = 0; k < cols; ++k) {
      const double x = size * scale[std::size_t(k)] * z();
      for (Index c = 0; c < cols; ++c) m(r, c) += x * basis(k, c);
    }
  }
  return m;
}

/// The planted rows: `shrunk` scaled to norm 1e-6, `collapsed` made the matrix's extra last row
/// plus normal noise of standard deviation 1e-3; the extra row then dropped.
oracle::matrix planted(oracle::matrix m, const std::vector<Index>& shrunk, const std::vector<Index>& collapsed,
                       std::uint64_t seed) {
  normal_numbers z(seed);
  const Index shared = m.rows - 1;
  for (Index r : shrunk) {
    const double norm = oracle::norm(m.row(r), m.cols);
    for (Index c = 0; c < m.cols; ++c) m(r, c) *= 1e-6 / norm;
  }
  for (Index r : collapsed)
    for (Index c = 0; c < m.cols; ++c) m(r, c) = m(shared, c) + 1e-3 * z();
  m.rows -= 1;
  m.values.resize(std::size_t(m.rows * m.cols));
  return m;
}

// ---------------------------------------------------------------------------------------------
// The oracle: the indicators and thresholds as docs/undertrained.md defines them, in double.

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// {median, 1.4826 * median absolute deviation}.
std::pair<double, double> robust(const std::vector<double>& v) {
  const double m = median_of(v);
  std::vector<double> deviations;
  for (double x : v) deviations.push_back(std::abs(x - m));
  return {m, 1.4826 * median_of(deviations)};
}

struct oracle_screen {
  std::vector<double> norms, cosines;
  double norm_threshold = 0, cosine_threshold = 0;
  std::vector<Index> flagged;
};

/// The unit top eigenvector of the covariance of m's rows, by power iteration to convergence.
std::vector<double> first_component(const oracle::matrix& m, const std::vector<double>& mean) {
  const Index d = m.cols;
  oracle::matrix cov(d, d);
  for (Index r = 0; r < m.rows; ++r)
    for (Index a = 0; a < d; ++a)
      for (Index b = 0; b < d; ++b) cov(a, b) += (m(r, a) - mean[std::size_t(a)]) * (m(r, b) - mean[std::size_t(b)]);
  std::vector<double> v(static_cast<std::size_t>(d), 1.0), next(static_cast<std::size_t>(d));
  for (int iteration = 0; iteration < 100000; ++iteration) {
    for (Index a = 0; a < d; ++a) next[std::size_t(a)] = oracle::dot(cov.row(a), v.data(), d);
    const double norm = oracle::norm(next.data(), d);
    double change = 0;
    for (Index a = 0; a < d; ++a) {
      change += std::abs(next[std::size_t(a)] / norm - v[std::size_t(a)]);
      v[std::size_t(a)] = next[std::size_t(a)] / norm;
    }
    if (change < 1e-15) break;
  }
  return v;
}

/// The screen of m with the default thresholds and the reference made of `reference` rows; the
/// direction removed is `direction` when given, else the first principal component.
oracle_screen screen(const oracle::matrix& m, const std::vector<Index>& reference,
                     const std::vector<double>& direction = {}) {
  const Index n = m.rows, d = m.cols;
  std::vector<double> mean(static_cast<std::size_t>(d));
  for (Index r = 0; r < n; ++r)
    for (Index c = 0; c < d; ++c) mean[std::size_t(c)] += m(r, c) / double(n);
  const std::vector<double> p = direction.empty() ? first_component(m, mean) : direction;
  const auto residual = [&](const std::vector<double>& x) {
    std::vector<double> centred(static_cast<std::size_t>(d));
    for (Index c = 0; c < d; ++c) centred[std::size_t(c)] = x[std::size_t(c)] - mean[std::size_t(c)];
    const double along = oracle::dot(centred.data(), p.data(), d);
    for (Index c = 0; c < d; ++c) centred[std::size_t(c)] -= along * p[std::size_t(c)];
    return centred;
  };
  std::vector<double> reference_row(static_cast<std::size_t>(d));
  for (Index r : reference)
    for (Index c = 0; c < d; ++c) reference_row[std::size_t(c)] += m(r, c) / double(reference.size());
  const std::vector<double> u = residual(reference_row);
  oracle_screen s;
  std::vector<double> logs;
  for (Index r = 0; r < n; ++r) {
    s.norms.push_back(oracle::norm(m.row(r), d));
    logs.push_back(std::log(s.norms.back()));
    const std::vector<double> x = residual(std::vector<double>(m.row(r), m.row(r) + d));
    s.cosines.push_back(oracle::cosine(x.data(), u.data(), d));
  }
  const auto [log_median, log_sigma] = robust(logs);
  s.norm_threshold = std::exp(log_median - std::max(5 * log_sigma, std::log(2.0)));
  const auto [cos_median, cos_sigma] = robust(s.cosines);
  s.cosine_threshold = std::min(std::max(cos_median + 5 * cos_sigma, 0.5), 0.9);
  for (Index r = 0; r < n; ++r)
    if (s.norms[std::size_t(r)] < s.norm_threshold || s.cosines[std::size_t(r)] > s.cosine_threshold)
      s.flagged.push_back(r);
  return s;
}

/// The small matrix the layouts are checked on: 400 rows of width 24, rows 10..15 shrunk and
/// every 31st row from 3 on (13 rows) collapsed onto one vector.
struct small_case {
  std::vector<Index> shrunk{10, 11, 12, 13, 14, 15};
  std::vector<Index> collapsed;
  oracle::matrix m;
  small_case() {
    for (Index r = 3; r < 400; r += 31) collapsed.push_back(r);
    m = planted(trained_like(400, 24, 7, 3.0), shrunk, collapsed, 8);
  }
};

template <class L>
void check_against_oracle(const clp::undertrained_rows& got, const oracle::matrix& values) {
  const oracle_screen want = screen(values, got.reference_ids);
  REQUIRE(got.norms.size() == want.norms.size());
  REQUIRE(got.cosines.size() == want.cosines.size());
  double norm_error = 0, cosine_error = 0;
  for (std::size_t r = 0; r < want.norms.size(); ++r) {
    norm_error = std::max(norm_error, std::abs(got.norms[r] - want.norms[r]) / want.norms[r]);
    cosine_error = std::max(cosine_error, std::abs(got.cosines[r] - want.cosines[r]));
  }
  const double relative = std::is_same_v<typename L::scalar, double> ? 1e-6 : 1e-12;  // double is read as float
  CHECK(norm_error <= relative);
  CHECK(cosine_error <= 2e-5);
  CHECK(got.norm_threshold == doctest::Approx(want.norm_threshold).epsilon(1e-5));
  REQUIRE(got.cosine_threshold);
  CHECK(*got.cosine_threshold == doctest::Approx(want.cosine_threshold).epsilon(1e-4));
  CHECK(got.flagged == want.flagged);
}

TEST_CASE_TEMPLATE("find_undertrained_rows: with unused ids the indicators and flags match the oracle", L,
                   CLP_TEST_LAYOUTS, CLP_TEST_BF16_LAYOUTS, fixtures::raw_buffer<Eigen::half>) {
  const small_case planted_case;
  L layout = fixtures::make<L>(planted_case.m);
  const oracle::matrix values = fixtures::rounded<typename L::scalar>(planted_case.m);
  clp::undertrained_options options;
  options.unused_ids = {planted_case.collapsed[5], planted_case.collapsed[0], planted_case.collapsed[0]};
  const clp::undertrained_rows got = clp::find_undertrained_rows(layout.get(), options);
  CHECK(got.reference == clp::undertrained_reference::unused_ids);
  CHECK(got.reference_ids == std::vector<Index>{planted_case.collapsed[0], planted_case.collapsed[5]});
  check_against_oracle<L>(got, values);
  std::vector<Index> planted_rows = planted_case.shrunk;
  planted_rows.insert(planted_rows.end(), planted_case.collapsed.begin(), planted_case.collapsed.end());
  std::sort(planted_rows.begin(), planted_rows.end());
  CHECK(got.flagged == planted_rows);
  CHECK(got.flagged_by_norm == 6);
  CHECK(got.flagged_by_cosine == 13);
}

TEST_CASE_TEMPLATE("find_undertrained_rows: without unused ids the collapsed group is the reference", L,
                   CLP_TEST_LAYOUTS, CLP_TEST_BF16_LAYOUTS, fixtures::raw_buffer<Eigen::half>) {
  const small_case planted_case;
  L layout = fixtures::make<L>(planted_case.m);
  const clp::undertrained_rows got = clp::find_undertrained_rows(layout.get());
  CHECK(got.reference == clp::undertrained_reference::cluster);
  CHECK(got.reference_ids == planted_case.collapsed);  // the shrunk rows, also alike, are not eligible
  check_against_oracle<L>(got, fixtures::rounded<typename L::scalar>(planted_case.m));
}

TEST_CASE("find_undertrained_rows: the planted case flags 95% of the planted rows and under 1% of the others") {
  // 5000 x 128; the target shares 3000 rows, 2.5% of them shrunk, 2.5% collapsed; no unused ids.
  const Index n = 5000, shared = 3000, planted_count = 75;
  std::vector<Index> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), Index(0));
  std::shuffle(order.begin(), order.end(), std::mt19937_64(11));
  std::vector<Index> shared_rows(order.begin(), order.begin() + shared);
  const std::vector<Index> shrunk(shared_rows.begin(), shared_rows.begin() + planted_count);
  const std::vector<Index> collapsed(shared_rows.begin() + planted_count, shared_rows.begin() + 2 * planted_count);
  const oracle::matrix values = planted(trained_like(n, 128, 12), shrunk, collapsed, 13);
  const auto source = fixtures::make<fixtures::eigen_row_major<float>>(values);
  const std::set<Index> planted_rows = [&] {
    std::set<Index> rows(shrunk.begin(), shrunk.end());
    rows.insert(collapsed.begin(), collapsed.end());
    return rows;
  }();
  const auto check = [&](const clp::undertrained_rows& got, Index others) {
    Index hits = 0, false_flags = 0;
    for (Index r : got.flagged) ++(planted_rows.count(r) ? hits : false_flags);
    MESSAGE(hits << " of " << planted_rows.size() << " planted rows flagged, " << false_flags << " of " << others
                 << " others");
    CHECK(double(hits) >= 0.95 * double(planted_rows.size()));
    CHECK(double(false_flags) < 0.01 * double(others));
  };
  const clp::undertrained_rows all = clp::find_undertrained_rows(source.m);
  CHECK(all.reference == clp::undertrained_reference::cluster);
  check(all, n - Index(planted_rows.size()));
  clp::undertrained_options options;
  options.rows = shared_rows;
  const clp::undertrained_rows among_shared = clp::find_undertrained_rows(source.m, options);
  check(among_shared, shared - Index(planted_rows.size()));
  std::sort(shared_rows.begin(), shared_rows.end());
  CHECK(
      std::includes(shared_rows.begin(), shared_rows.end(), among_shared.flagged.begin(), among_shared.flagged.end()));
  CHECK(among_shared.norm_threshold == all.norm_threshold);  // the whole matrix's distribution
  CHECK(among_shared.cosine_threshold == all.cosine_threshold);
}

/// The centred rows' scatter matrix (X - 1 mean^T)^T (X - 1 mean^T), in double.
Eigen::MatrixXd scatter_of(const oracle::matrix& m) {
  Eigen::MatrixXd x(m.rows, m.cols);
  for (Index r = 0; r < m.rows; ++r)
    for (Index c = 0; c < m.cols; ++c) x(r, c) = m(r, c);
  const Eigen::MatrixXd centred = x.rowwise() - x.colwise().mean();
  return centred.transpose() * centred;
}

TEST_CASE("find_undertrained_rows: the component agrees with a double eigensolver's as far as the thresholds need") {
  SUBCASE("one direction dominates: the top eigenvector, and the cosines of the oracle") {
    const oracle::matrix values = fixtures::rounded<float>(trained_like(3000, 96, 31, 3.0));
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen(scatter_of(values));
    const Eigen::VectorXd top = eigen.eigenvectors().col(95);
    const auto layout = fixtures::make<fixtures::eigen_row_major<float>>(values);
    clp::undertrained_options options;
    options.unused_ids = {0, 1, 2};
    const clp::undertrained_rows got = clp::find_undertrained_rows(layout.m, options);
    REQUIRE(got.component.size() == 96);
    const Eigen::Map<const Eigen::VectorXd> component(got.component.data(), 96);
    CHECK(component.norm() == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(1 - std::abs(component.dot(top)) <= 5e-11);  // about 1e-5 radians
    check_against_oracle<fixtures::eigen_row_major<float>>(got, values);
  }
  SUBCASE("the top variances are close: a direction of high variance, and the eigenvector's flags") {
    // Isotropic rows, plus a collapsed group for the cluster search to find and the cosine
    // indicator to flag. Any direction of the top variances' span removes about as much of
    // every row: the flags and the threshold are those of the eigenvector.
    normal_numbers z(41);
    oracle::matrix values(4000, 64);
    for (double& x : values.values) x = 0.1 * z();
    std::vector<Index> collapsed;
    for (Index r = 7; r < 4000; r += 331) collapsed.push_back(r);  // 13 rows: no dominant direction
    for (Index r : collapsed)
      for (Index c = 0; c < 64; ++c) values(r, c) = values(3, c) + 1e-3 * z();
    values = fixtures::rounded<float>(values);
    const Eigen::MatrixXd scatter = scatter_of(values);
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen(scatter);
    const double largest = eigen.eigenvalues()[63];
    REQUIRE(eigen.eigenvalues()[61] > 0.9 * largest);  // no direction dominates
    const auto layout = fixtures::make<fixtures::eigen_row_major<float>>(values);
    const clp::undertrained_rows got = clp::find_undertrained_rows(layout.m);
    REQUIRE(got.component.size() == 64);
    const Eigen::Map<const Eigen::VectorXd> component(got.component.data(), 64);
    CHECK(component.norm() == doctest::Approx(1.0).epsilon(1e-12));
    const double variance = component.dot(scatter * component);
    MESSAGE("the component's variance is " << variance / largest << " of the largest eigenvalue, the mean's "
                                           << eigen.eigenvalues().mean() / largest);
    CHECK(variance >= 0.9 * largest);
    REQUIRE(got.reference == clp::undertrained_reference::cluster);
    // The oracle with each of the three top eigenvectors: which of them an exact solver returns
    // is an accident of the sample, and so is how far their thresholds lie apart.
    const auto oracle_with = [&](Index column) {
      const Eigen::VectorXd v = eigen.eigenvectors().col(column);
      return screen(values, got.reference_ids, std::vector<double>(v.data(), v.data() + 64));
    };
    const oracle_screen want = oracle_with(63);
    double eigenvectors_apart = 0;
    for (Index column : {62, 61})
      eigenvectors_apart =
          std::max(eigenvectors_apart, std::abs(oracle_with(column).cosine_threshold - want.cosine_threshold));
    REQUIRE(got.cosine_threshold);
    MESSAGE("cosine threshold " << *got.cosine_threshold << ", the top eigenvector's " << want.cosine_threshold
                                << ", the next two's up to " << eigenvectors_apart << " from it");
    CHECK(std::abs(*got.cosine_threshold - want.cosine_threshold) <= eigenvectors_apart);
    CHECK(got.flagged == want.flagged);
    std::vector<Index> group = collapsed;
    group.insert(group.begin(), 3);
    CHECK(got.flagged == group);
  }
}

TEST_CASE_TEMPLATE("find_undertrained_rows: the result is the same for any thread count", L,
                   fixtures::eigen_col_major<float>, fixtures::eigen_row_major<float>) {
  // The small case reads in two slots; the larger one (a planted collapsed group, so that the
  // cluster search runs) in twenty, more than any thread count here.
  const small_case planted_case;
  std::vector<Index> collapsed;
  for (Index r = 5; r < 5000; r += 97) collapsed.push_back(r);
  const oracle::matrix larger = planted(trained_like(5000, 128, 51), {}, collapsed, 52);
  for (const oracle::matrix* values : {&planted_case.m, &larger}) {
    const auto layout = fixtures::make<L>(*values);
    clp::undertrained_options options;
    options.threads = 1;
    const clp::undertrained_rows one = clp::find_undertrained_rows(layout.m, options);
    for (int threads : {2, 3}) {
      options.threads = threads;
      const clp::undertrained_rows other = clp::find_undertrained_rows(layout.m, options);
      CHECK(one.flagged == other.flagged);
      CHECK(one.norms == other.norms);
      CHECK(one.cosines == other.cosines);
      CHECK(one.component == other.component);
      CHECK(one.reference_ids == other.reference_ids);
    }
    CHECK(one.reference == clp::undertrained_reference::cluster);
  }
}

TEST_CASE("find_undertrained_rows: a matrix with no near-identical rows and no unused ids has no reference") {
  const oracle::matrix values = trained_like(300, 16, 21);
  const auto layout = fixtures::make<fixtures::eigen_row_major<double>>(values);
  const clp::undertrained_rows got = clp::find_undertrained_rows(layout.m);
  CHECK(got.reference == clp::undertrained_reference::none);
  CHECK(got.reference_ids.empty());
  CHECK(got.cosines.empty());
  CHECK_FALSE(got.cosine_threshold);
  CHECK(got.flagged.empty());
  CHECK(got.norms.size() == 301);  // trained_like's extra row is kept here
  const oracle_screen want = screen(values, {0});
  CHECK(got.norm_threshold == doctest::Approx(want.norm_threshold).epsilon(1e-6));
}

TEST_CASE("find_undertrained_rows: overrides set the thresholds and can turn each indicator off") {
  const small_case planted_case;
  const auto layout = fixtures::make<fixtures::eigen_row_major<float>>(planted_case.m);
  clp::undertrained_options options;
  options.norm_threshold = 0.0;
  clp::undertrained_rows got = clp::find_undertrained_rows(layout.m, options);
  CHECK(got.norm_threshold == 0);
  CHECK(got.flagged == planted_case.collapsed);
  options.norm_threshold.reset();
  options.cosine_threshold = 1.0;
  got = clp::find_undertrained_rows(layout.m, options);
  CHECK(got.flagged == planted_case.shrunk);
  CHECK(got.reference == clp::undertrained_reference::cluster);  // the reference is still found
  options.cosine_threshold.reset();
  options.norm_spread = 0;
  options.max_norm_ratio = 1;  // below the median norm
  got = clp::find_undertrained_rows(layout.m, options);
  CHECK(got.flagged_by_norm == 200);
  std::vector<double> sorted = got.norms;
  std::sort(sorted.begin(), sorted.end());  // the median of the logarithms of 400 norms
  CHECK(got.norm_threshold == doctest::Approx(std::sqrt(sorted[199] * sorted[200])).epsilon(1e-12));
}

TEST_CASE("find_undertrained_rows: refuses ids past the matrix, options out of range and non-finite elements") {
  Eigen::MatrixXf m = Eigen::MatrixXf::Random(40, 6);
  clp::undertrained_options options;
  options.unused_ids = {3, 40};
  CHECK(fixtures::error_of([&] { clp::find_undertrained_rows(m, options); }) ==
        "clp::find_undertrained_rows: 'options.unused_ids' holds 40, not a row of the 40-row matrix");
  options.unused_ids = {};
  options.rows = std::vector<Index>{-1};
  CHECK(fixtures::error_of([&] { clp::find_undertrained_rows(m, options); }) ==
        "clp::find_undertrained_rows: 'options.rows' holds -1, not a row of the 40-row matrix");
  options.rows.reset();
  options.min_cluster_rows = 1;
  CHECK(fixtures::error_of([&] { clp::find_undertrained_rows(m, options); }) ==
        "clp::find_undertrained_rows: 'options.min_cluster_rows' must be at least 2, not 1.000000");
  options.min_cluster_rows = 8;
  options.max_norm_ratio = 0;
  CHECK(fixtures::error_of([&] { clp::find_undertrained_rows(m, options); }).find("'options.max_norm_ratio'") !=
        std::string::npos);
  m(17, 4) = NAN;
  const auto error = fixtures::thrown<clp::non_finite_input>([&] { clp::find_undertrained_rows(m); });
  REQUIRE(error);
  CHECK(error->facts().row == 17);
  CHECK(error->facts().column == 4);
  CHECK(std::string(error->what()) == "clp::find_undertrained_rows: 'embeddings' row 17 column 4 is NaN or infinite");
  const Eigen::MatrixXf empty(0, 6);
  CHECK(clp::find_undertrained_rows(empty).flagged.empty());
}

/// transformer.wte.weight of a shipped model's model.safetensors (float32), or an empty matrix
/// when the file cannot be read.
fixtures::eigen_row_major<float> shipped_embeddings(const std::string& model) {
  std::ifstream file(std::string(CLP_TEST_DATA_DIR "/../../examples/models/") + model + "/model.safetensors",
                     std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::uint64_t header = 0;
  if (bytes.size() < 8) return {0, 0, 0.0};
  std::memcpy(&header, bytes.data(), 8);
  const nlohmann::json tensor = nlohmann::json::parse(bytes.substr(8, header))["transformer.wte.weight"];
  REQUIRE(tensor["dtype"] == "F32");
  fixtures::eigen_row_major<float> m(tensor["shape"][0].get<Index>(), tensor["shape"][1].get<Index>(), 0.0);
  const auto begin = tensor["data_offsets"][0].get<std::size_t>();
  REQUIRE(tensor["data_offsets"][1].get<std::size_t>() - begin == sizeof(float) * std::size_t(m.m.size()));
  std::memcpy(m.m.data(), bytes.data() + 8 + header + begin, sizeof(float) * std::size_t(m.m.size()));
  return m;
}

TEST_CASE("find_undertrained_rows: the shipped models, trained on every token, have next to nothing flagged") {
  for (const char* model : {"en-large", "de-small"}) {
    const fixtures::eigen_row_major<float> embeddings = shipped_embeddings(model);
    if (embeddings.m.size() == 0) {
      clp_test::skip(std::string("examples/models/") + model + "/model.safetensors is absent");
      return;
    }
    const clp::undertrained_rows got = clp::find_undertrained_rows(embeddings.m);
    MESSAGE(std::string(model) << ": " << got.flagged.size() << " of " << embeddings.m.rows()
                               << " rows flagged, norm threshold " << got.norm_threshold << ", reference "
                               << int(got.reference));
    CHECK(double(got.flagged.size()) < 0.005 * double(embeddings.m.rows()));
  }
}

TEST_CASE("without_source_rows: the pairs of the given source rows become missing target rows") {
  clp::vocabulary_overlap overlap;
  overlap.target_ids = {0, 2, 3, 5, 8};
  overlap.source_ids = {40, 7, 12, 3, 9};
  overlap.matched_by = {clp::match_reason::exact, clp::match_reason::bytes, clp::match_reason::exact,
                        clp::match_reason::forced, clp::match_reason::exact};
  overlap.missing_ids = {1, 4, 6, 7, 9};
  overlap.unnamed_ids = {9};
  overlap.exact_matches = 3;
  overlap.byte_matches = 1;
  overlap.forced_matches = 1;
  overlap.shared_strings = 4;
  overlap.source_vocab_size = 50;
  overlap.target_vocab_size = 9;
  const clp::vocabulary_overlap kept = clp::without_source_rows(overlap, {3, 12, 41, 7, 12});
  CHECK(kept.target_ids == std::vector<Index>{0, 8});
  CHECK(kept.source_ids == std::vector<Index>{40, 9});
  CHECK(kept.matched_by == std::vector<clp::match_reason>{clp::match_reason::exact, clp::match_reason::exact});
  CHECK(kept.missing_ids == std::vector<Index>{1, 2, 3, 4, 5, 6, 7, 9});
  CHECK(kept.unnamed_ids == overlap.unnamed_ids);
  CHECK(kept.exact_matches == 2);
  CHECK(kept.byte_matches == 0);
  CHECK(kept.forced_matches == 0);
  CHECK(kept.shared_strings == 4);
  CHECK(kept.target_rows() == overlap.target_rows());
  CHECK(kept.source_vocab_size == 50);
  CHECK(kept.target_vocab_size == 9);
  CHECK(clp::without_source_rows(overlap, {}).target_ids == overlap.target_ids);
  CHECK(fixtures::error_of([&] {
          clp::without_source_rows(overlap, {3, -2});
        }) == "clp::without_source_rows: 'source_rows' holds -2, not a row id");
}

TEST_CASE("without_source_rows: an overlap built by hand without match reasons keeps its counts") {
  const clp::vocabulary_overlap overlap = fixtures::make_overlap({1, 2, 4}, {6, 5, 4}, 6, 7);
  const clp::vocabulary_overlap kept = clp::without_source_rows(overlap, {5});
  CHECK(kept.target_ids == std::vector<Index>{1, 4});
  CHECK(kept.source_ids == std::vector<Index>{6, 4});
  CHECK(kept.matched_by.empty());
  CHECK(kept.missing_ids == std::vector<Index>{0, 2, 3, 5});
  CHECK(kept.exact_matches == overlap.exact_matches);
}

}  // namespace undertrained_cases
