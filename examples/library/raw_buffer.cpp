// CLP-Transfer on raw buffers: memory from any framework, described by pointer, shape, leading
// dimension and storage order. Here the source embedding is bfloat16, as checkpoints store it,
// and the output is bfloat16 too; computation is float32.
#include <clp/clp.hpp>

#include <cstdio>
#include <string>
#include <vector>

int main() {
  const std::vector<std::string> source_vocab{"the", "cat", "sat", "on", "mat"};
  const std::vector<std::string> target_vocab{"die", "cat", "mat", "katze", "on"};
  const clp::Index d_source = 16, d_helper = 4;

  std::vector<Eigen::bfloat16> source(source_vocab.size() * d_source);
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = Eigen::bfloat16(float(i % 7) - 3.0f);
  // The helper rows live in a wider buffer (leading dimension 6): a view, not a copy.
  std::vector<float> helper_storage(target_vocab.size() * 6);
  for (std::size_t i = 0; i < helper_storage.size(); ++i) helper_storage[i] = 1.0f + float(i % 5);
  std::vector<Eigen::bfloat16> target(target_vocab.size() * d_source);

  const clp::matrix_view<const Eigen::bfloat16> source_view(source.data(), clp::Index(source_vocab.size()), d_source);
  const clp::matrix_view<const float> helper_view(helper_storage.data(), clp::Index(target_vocab.size()), d_helper, 6,
                                                  clp::storage_order::row_major);
  clp::matrix_view<Eigen::bfloat16> target_view(target.data(), clp::Index(target_vocab.size()), d_source);

  const auto overlap = clp::intersect_vocabularies(source_vocab, target_vocab);
  clp::synthesis_options options;
  options.threads = 2;
  const auto report =
      clp::synthesize_rows(source_view, helper_view, overlap, target_view, clp::paper_weights{}, options);

  std::printf("%td copied, %td synthesised, %td fallbacks\n", report.copied_rows, report.synthesized_rows,
              report.degenerate_rows());
  return report.copied_rows == 3 && report.synthesized_rows == 2 ? 0 : 1;
}
