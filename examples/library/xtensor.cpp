// CLP-Transfer with xtensor arrays. The adapter is opt-in: include it yourself.
#include <clp/adapters/xtensor.hpp>
#include <clp/clp.hpp>

#if __has_include(<xtensor/generators/xrandom.hpp>)
#include <xtensor/generators/xrandom.hpp>
#else
#include <xtensor/xrandom.hpp>
#endif

#include <cmath>
#include <cstdio>
#include <string>
#include <unordered_map>

int main() {
  const std::unordered_map<std::string, long> source_vocab{{"a", 0}, {"b", 1}, {"c", 2}};
  const std::unordered_map<std::string, long> target_vocab{{"b", 0}, {"x", 1}, {"c", 2}, {"y", 3}};

  xt::random::seed(7);
  const xt::xtensor<double, 2> source = xt::random::randn<double>({3, 6});
  const xt::xtensor<float, 2> helper = xt::random::rand<float>({4, 5});
  xt::xtensor<double, 2> target = xt::zeros<double>({4, 6});

  const auto overlap = clp::intersect_vocabularies(source_vocab, target_vocab);
  // Top-10 neighbours with clamped, renormalised cosines (k larger than the overlap: all of it).
  const auto report = clp::synthesize_rows(source, helper, overlap, target, clp::top_k_weights{10});

  std::printf("%td copied, %td synthesised\n", report.copied_rows, report.synthesized_rows);
  return target(0, 0) == source(1, 0) && std::isfinite(target(1, 0)) ? 0 : 1;
}
