#include "io/tokenizer/vocabulary.hpp"

namespace clp_transfer::io {

token_vocabulary read_vocab_json(const std::filesystem::path& file) {
  const auto document = read_json_file<nlohmann::json>(file);
  return naming_file(file, [&] {
    if (!document.is_object()) malformed(file, "not a JSON object of token -> id");
    detail::vocabulary_builder builder(file);
    for (const auto& [token, id] : document.items()) builder.add(token, id, false);
    return builder.finish();
  });
}

}  // namespace clp_transfer::io
