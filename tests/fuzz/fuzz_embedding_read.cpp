// Fuzz target: reading a model's input embedding (io/embedding_matrix.hpp, embedding_matrix::read,
// after io::model_weights and io::find_input_embedding) and screening it for NaN and infinity
// (require_finite: the read only maps the tensor; the program screens every row it uses, the
// library its share, before anything is written). The folder holds a fixed config.json; the
// input is model.safetensors (see safetensors_from_input). An accepted embedding must be a
// finite rows x cols matrix, checked here element by element.
#include <cmath>

#include "fuzz_support.hpp"
#include "io/embedding_matrix.hpp"
#include "io/embedding_names.hpp"

using namespace clp_fuzz;

namespace fuzz_embedding_read {

CLP_FUZZ_TARGET(embedding_read) {
  static const fs::path folder = [] {
    const fs::path f = fresh_folder("embedding");
    write_bytes(f / "config.json", R"({"model_type": "gpt2", "vocab_size": 8, "n_embd": 4})");
    return f;
  }();
  write_bytes(folder / "model.safetensors", safetensors_from_input(data, size));
  expect_clean(
      folder,
      [&] {
        const clp_transfer::io::model_weights model(folder);
        const std::string name = clp_transfer::io::find_input_embedding(folder, model.tensor_names());
        const auto matrix = clp_transfer::embedding_matrix::read(model, name);
        clp_transfer::require_finite(matrix);
        const auto& tensor = model.locate(name).tensor;
        if (matrix.rows() != tensor.shape.at(0) || matrix.cols() != tensor.shape.at(1)) finding("wrong matrix size");
        matrix.visit([&](auto view) {
          for (clp::Index r = 0; r < view.rows(); ++r)
            for (clp::Index c = 0; c < view.cols(); ++c)
              if (!std::isfinite(static_cast<float>(view(r, c)))) finding("a non-finite element was accepted");
        });
      },
      /*program_errors=*/true);
  return 0;
}

}  // namespace fuzz_embedding_read
