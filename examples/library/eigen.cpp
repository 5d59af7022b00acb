// CLP-Transfer with Eigen matrices: a trainer that already holds its embeddings in Eigen.
#include <clp/clp.hpp>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

int main() {
  // Vocabularies as trainers hold them: token -> id maps or id-indexed token lists.
  const std::map<std::string, int> source_vocab{{"Ġthe", 0}, {"Ġhouse", 1}, {"Ġis", 2}, {"Ġred", 3}};
  const std::vector<std::string> target_vocab{"Ġdas", "Ġhouse", "Ġist", "Ġred", "Ġrot"};

  // The large source model's embeddings (4 tokens x 8) and the small helper model's (5 x 3).
  // Row-major, as checkpoints store them; column-major works the same.
  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const RowMajor source = RowMajor::Random(4, 8);
  const RowMajor helper = RowMajor::Random(5, 3).array() + 1.0f;

  // Overlap: Ġhouse and Ġred. Missing: Ġdas, Ġist, Ġrot.
  const clp::vocabulary_overlap overlap =
      clp::intersect_vocabularies(source_vocab, target_vocab, {source.rows(), helper.rows(), {}});

  // The new embedding is written in place into a caller-owned matrix.
  RowMajor target(helper.rows(), source.cols());
  const clp::synthesis_report report = clp::synthesize_rows(source, helper, overlap, target);  // clp::default_weighting

  // A model with an untied output head: name the pair, right after the output. The head's rows
  // get the same weights, computed once.
  const RowMajor source_head = RowMajor::Random(4, 8);
  RowMajor target_head(helper.rows(), source_head.cols());
  clp::synthesize_rows(source, helper, overlap, target, clp::untied_head{source_head, target_head},
                       clp::paper_weights{});

  // Any number of further matrices with a row (or a value) per token, each with its own
  // element type and width: here a head and a per-token output bias (#vocab by 1), the way
  // BERT's cls.predictions.bias or BART's final_logits_bias are stored. One set of weights.
  const Eigen::VectorXd source_bias = Eigen::VectorXd::Random(4);
  Eigen::VectorXd target_bias(helper.rows());
  clp::synthesize_rows(source, helper, overlap, target,
                       clp::matrix_pairs{{"lm_head", source_head, target_head}, {"bias", source_bias, target_bias}},
                       clp::make_weighting("omp", 2));

  // The paper's baseline without a helper: overlapping rows copied, the rest drawn at random.
  RowMajor baseline(helper.rows(), source.cols());
  clp::overlap_random(source, overlap, baseline, /*seed=*/42);

  std::printf("overlap %td tokens (%.0f%% of the source vocabulary), %td rows synthesised, %td fallbacks\n",
              overlap.size(), 100 * overlap.share_of_source(), report.synthesized_rows, report.degenerate_rows());
  return target.row(1) == source.row(1) && target_head.row(1) == source_head.row(1) &&
                 target_bias(1) == source_bias(1) && baseline.row(3) == source.row(3) && target.allFinite()
             ? 0
             : 1;
}
