#include "io/tokenizer/files.hpp"

namespace clp_transfer::io {

std::optional<vocabulary_source> find_vocabulary_file(const std::filesystem::path& folder) {
  std::error_code ignored;
  const auto present = [&](std::string_view name) { return std::filesystem::exists(folder / name, ignored); };
  if (present("tokenizer.json")) return vocabulary_source{folder / "tokenizer.json", vocabulary_format::tokenizer_json};
  if (present("vocab.json")) return vocabulary_source{folder / "vocab.json", vocabulary_format::vocab_json};
  for (std::string_view name : sentencepiece_model_names)
    if (present(name)) return vocabulary_source{folder / name, vocabulary_format::sentencepiece};
  if (present("vocab.txt")) return vocabulary_source{folder / "vocab.txt", vocabulary_format::wordpiece};
  return std::nullopt;
}

std::vector<std::filesystem::path> sentencepiece_models_beside(const std::filesystem::path& folder,
                                                               const std::filesystem::path& read) {
  std::vector<std::filesystem::path> models;
  std::error_code ignored;
  for (std::string_view name : sentencepiece_model_names)
    if (folder / name != read && std::filesystem::exists(folder / name, ignored)) models.push_back(folder / name);
  return models;
}

token_vocabulary read_vocabulary_file(const vocabulary_source& source) {
  switch (source.format) {
    case vocabulary_format::tokenizer_json:
      return read_tokenizer_json(source.file).vocabulary;
    case vocabulary_format::vocab_json:
      return read_vocab_json(source.file);
    case vocabulary_format::sentencepiece:
      return sentencepiece_vocabulary(source.file, read_sentencepiece_model(source.file));
    case vocabulary_format::wordpiece:
      break;
  }
  return read_wordpiece_vocab(source.file);
}

token_vocabulary read_vocabulary(const std::filesystem::path& folder) {
  const std::optional<vocabulary_source> source = find_vocabulary_file(folder);
  if (!source) no_vocabulary_file(folder);
  return read_vocabulary_file(*source);
}

std::vector<std::filesystem::path> tokenizer_files(const std::filesystem::path& folder) {
  static constexpr std::array<std::string_view, 6> names = {
      "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt", "vocab.txt"};
  std::error_code error;
  std::filesystem::directory_iterator items(folder, error);
  if (error) throw io_error(folder, "cannot list: " + error.message());
  std::vector<std::filesystem::path> files;
  for (const auto& item : items) {
    const std::string name = item.path().filename().string();
    if (item.is_regular_file(error) &&
        (std::find(names.begin(), names.end(), name) != names.end() || item.path().extension() == ".model"))
      files.push_back(item.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace clp_transfer::io
