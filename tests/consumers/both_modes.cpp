// One synthesis of every kind, written as raw bytes to the file named by argv[1]: built once
// header-only (clp::clp) and once against the compiled library (clp::compiled), with the same
// flags, and the two files compared (test consumer.both_modes_same_bytes). Every path that
// CLP_SEPARATE_COMPILATION moves into the library runs: each shipped policy's synthesize_rows
// (through a clp::weighting), synthesize_each, evaluate and evaluate_each, the under-trained
// screen and the neighbour search.
#include <clp/clp.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// A rows x cols matrix of values in [-1, 1) from SplitMix64, the same on every machine.
matrix generated(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed) {
  matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i)
    m.data()[i] = float(double(clp::splitmix64(seed + std::uint64_t(i)) >> 11) * 0x1.0p-52 - 1.0);
  return m;
}

struct byte_sink {
  std::FILE* file;
  void matrix_bytes(const matrix& m) const { std::fwrite(m.data(), sizeof(float), std::size_t(m.size()), file); }
  template <class T>
  void values(const std::vector<T>& v) const {
    std::fwrite(v.data(), sizeof(T), v.size(), file);
  }
  void value(double x) const { std::fwrite(&x, sizeof x, 1, file); }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::FILE* file = std::fopen(argv[1], "wb");
  if (file == nullptr) return 2;
  const byte_sink out{file};

  // 400 source rows of width 24, 300 target rows with a helper of width 16; every third
  // target token is missing.
  std::vector<std::string> source_vocab, target_vocab;
  for (int i = 0; i < 400; ++i) source_vocab.push_back("s" + std::to_string(i));
  for (int i = 0; i < 300; ++i) target_vocab.push_back(i % 3 == 0 ? "t" + std::to_string(i) : "s" + std::to_string(i));
  const matrix source = generated(400, 24, 1), helper = generated(300, 16, 2);
  const clp::vocabulary_overlap overlap = clp::intersect_vocabularies(source_vocab, target_vocab, {400, 300, {}});

  matrix output = matrix::Zero(300, 24);
  out.value(double(clp::synthesize_rows(source, helper, overlap, output).synthesized_rows));
  out.matrix_bytes(output);

  const std::vector<std::string> names{"paper",   "paper-guarded", "clamped", "top-k",
                                       "softmax", "sparsemax",     "omp",     "least-squares"};
  std::vector<clp::weighting> weightings;
  std::vector<matrix> each(names.size(), matrix::Zero(300, 24));
  std::vector<clp::synthesis_job> jobs;
  for (std::size_t i = 0; i < names.size(); ++i) {
    weightings.push_back(clp::make_weighting(names[i], 8));
    output.setZero();
    const clp::synthesis_report report = clp::synthesize_rows(source, helper, overlap, output, weightings[i]);
    out.value(double(report.negative_sum_rows));
    out.matrix_bytes(output);
    jobs.emplace_back(weightings[i], source, each[i]);
  }
  clp::synthesize_each(helper, overlap, jobs);
  for (const matrix& m : each) out.matrix_bytes(m);

  clp::evaluation_options options;
  options.splits = 2;
  for (const std::vector<clp::evaluation>& per_split : clp::evaluate_each(source, helper, overlap, weightings, options))
    for (const clp::evaluation& e : per_split) out.values(e.scores.front().cosine);
  out.values(clp::evaluate(source, helper, overlap).scores.front().relative_error);

  const clp::undertrained_rows undertrained = clp::find_undertrained_rows(source);
  out.values(undertrained.norms);
  out.values(undertrained.flagged);
  std::vector<clp::Index> queries(50);
  for (std::size_t i = 0; i < queries.size(); ++i) queries[i] = clp::Index(i);
  out.values(clp::nearest_neighbours(helper, queries, clp::knn_options{5}));
  return std::fclose(file) == 0 ? 0 : 2;
}
