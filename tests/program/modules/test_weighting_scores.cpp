// weighting_scores/candidates.hpp and weighting_scores/recommendation.hpp: the weightings
// `evaluate` scores (the default list, --weightings' entries and refusals) and the rule that
// keeps the default unless another weighting leads it by more than the splits' spread.
#include "weighting_scores/candidates.hpp"
#include "weighting_scores/recommendation.hpp"

#include <string>
#include <variant>
#include <vector>

#include <doctest/doctest.h>

#include "support/error_of.hpp"

using namespace clp_transfer;

namespace {

std::vector<std::string> labels(const std::vector<weighting_candidate>& list) {
  std::vector<std::string> out;
  for (const weighting_candidate& c : list) out.push_back(c.label);
  return out;
}

}  // namespace

TEST_CASE("evaluate candidates: the default list, and --weightings' entries as the transfer builds them") {
  CHECK(labels(default_candidates()) ==
        std::vector<std::string>{"paper", "paper-guarded", "clamped", "sparsemax", "omp", "least-squares", "top-k k=5",
                                 "top-k k=10", "top-k k=30", "softmax k=5", "softmax k=10", "softmax k=30"});
  const std::vector<weighting_candidate> chosen =
      parse_candidates("top-k,least-squares:20,omp:3,softmax:7,least-squares");
  CHECK(labels(chosen) ==
        std::vector<std::string>{"top-k k=10", "least-squares k=20", "omp k=3", "softmax k=7", "least-squares"});
  CHECK(std::get<clp::top_k_weights>(chosen[0].policy).k == 10);
  CHECK(std::get<clp::least_squares_map>(chosen[1].policy).norm_neighbours == 20);
  CHECK(std::get<clp::omp_weights>(chosen[2].policy).k == 3);
  CHECK(std::get<clp::least_squares_map>(chosen[4].policy).norm_neighbours == 10);
  CHECK(!chosen[4].k);  // the default weighting at its default k: what recommend() keeps
  CHECK(as_options(chosen[1]) == "--weighting least-squares --k 20");
  CHECK(as_options(chosen[0]) == "--weighting top-k --k 10");
}

TEST_CASE("evaluate candidates: --weightings refusals name the option and the entry") {
  const auto refused = [](const std::string& list) { return clp_test::error_of([&] { parse_candidates(list); }); };
  CHECK(refused("top-k,ridge") ==
        "--weightings names an unknown weighting 'ridge' (expected paper, paper-guarded, clamped, top-k, softmax, "
        "sparsemax, omp or least-squares)");
  CHECK(refused("") == "--weightings has an empty entry in '' (expected NAME or NAME:K, comma-separated)");
  CHECK(refused("top-k,") == "--weightings has an empty entry in 'top-k,' (expected NAME or NAME:K, comma-separated)");
  CHECK(refused("top-k:x") == "--weightings entry 'top-k:x': k must be a whole number of at least 1");
  CHECK(refused("top-k:0") == "--weightings entry 'top-k:0': k must be a whole number of at least 1");
  CHECK(refused("top-k:") == "--weightings entry 'top-k:': k must be a whole number of at least 1");
  CHECK(refused("top-k:99999999999") ==
        "--weightings entry 'top-k:99999999999': k must be a whole number of at least 1");
  CHECK(refused("clamped:4") == "--weightings entry 'clamped:4': clamped reads no k");
  CHECK(refused("top-k:10,top-k") == "--weightings names top-k k=10 twice");
  CHECK(refused("least-squares,least-squares:10") == "--weightings names least-squares twice");
}

TEST_CASE("evaluate recommendation: the default kept within the splits' spread, replaced beyond it") {
  const std::vector<weighting_candidate> list = parse_candidates("top-k:30,least-squares,paper");
  const auto outcome_of = [&](std::size_t c, std::vector<double> splits, Index inflated) {
    weighting_score o;
    o.weighting = &list[c];
    o.split_cosines = splits;
    for (double x : splits) o.mean_cosine += x / double(splits.size());
    o.inflated_rows = inflated;
    return o;
  };
  // top-k leads by 0.01 on every split (spread 0): it replaces the default.
  std::vector<weighting_score> sorted{outcome_of(2, {0.9, 0.9, 0.9}, 5), outcome_of(0, {0.71, 0.72, 0.73}, 0),
                                      outcome_of(1, {0.70, 0.71, 0.72}, 0)};
  recommendation r = recommend(sorted);
  CHECK(r.chosen == &sorted[1]);
  CHECK(!r.is_default);
  CHECK(r.lead == doctest::Approx(0.01));
  // It leads by 0.01 on average, but by 0.03 and -0.01 on two splits (spread 0.02): default kept.
  sorted = {outcome_of(0, {0.74, 0.70, 0.72}, 0), outcome_of(1, {0.71, 0.71, 0.70}, 0)};
  r = recommend(sorted);
  CHECK(r.chosen == &sorted[1]);
  CHECK(r.is_default);
  CHECK(r.reason.find("within the splits' spread") != std::string::npos);
  // The default not scored: the best that inflates no row, and the reason says why.
  sorted = {outcome_of(2, {0.9}, 3), outcome_of(0, {0.7}, 0)};
  r = recommend(sorted);
  CHECK(r.chosen == &sorted[1]);
  CHECK(r.reason == "the best held-out cosine among those that inflate no row; the default was not scored");
  // Every weighting inflates rows: none.
  sorted = {outcome_of(2, {0.9}, 3)};
  CHECK(recommend(sorted).chosen == nullptr);
}
