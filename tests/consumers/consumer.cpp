// A trainer's view of the library: two embedding matrices and two vocabularies in, a new
// embedding out. Built by the consumer projects to prove the package works both ways.
#include <clp/clp.hpp>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

int main() {
  const std::map<std::string, int> source_vocab{{"the", 0}, {"cat", 1}, {"sat", 2}};
  const std::vector<std::string> target_vocab{"die", "cat", "the", "katze"};
  const Eigen::MatrixXf source = Eigen::MatrixXf::Random(3, 8);
  const Eigen::MatrixXf helper = Eigen::MatrixXf::Random(4, 4).array() + 2.0f;
  Eigen::MatrixXf output(4, 8);

  const auto overlap = clp::intersect_vocabularies(source_vocab, target_vocab, {3, 4, {}});
  const auto report = clp::synthesize_rows(source, helper, overlap, output);
  const bool copied = output.row(1) == source.row(1) && output.row(2) == source.row(0);
  const bool finite = output.allFinite();
  std::printf("clp %d.%d.%d: %td copied, %td synthesised\n", clp::version_major, clp::version_minor, clp::version_patch,
              report.copied_rows, report.synthesized_rows);
  return copied && finite && report.synthesized_rows == 2 ? 0 : 1;
}
