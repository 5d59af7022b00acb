#include "io/tokenizer/reading.hpp"

namespace clp_transfer {

namespace detail {

tokenizer_reading read_vocabulary_source(const io::vocabulary_source& source,
                                         const nlohmann::ordered_json* tokenizer_config) {
  switch (source.format) {
    case io::vocabulary_format::tokenizer_json:
      return read_tokenizer_json_file(source.file);
    case io::vocabulary_format::vocab_json:
      return read_vocab_file(source.file, tokenizer_config);
    case io::vocabulary_format::sentencepiece:
      return read_sentencepiece_file(source.file);
    case io::vocabulary_format::wordpiece:
      break;
  }
  return read_vocab_txt_file(source.file, tokenizer_config);
}

void check_models_beside(const std::filesystem::path& folder, tokenizer_reading& reading) {
  for (const std::filesystem::path& model : io::sentencepiece_models_beside(folder, reading.file)) {
    if (io::is_tiktoken_file(model)) {
      reading.notes.push_back(model.string() + " holds tiktoken's BPE ranks, not a SentencePiece model: not " +
                              "checked against " + reading.file.filename().string());
      continue;
    }
    io::check_sentencepiece_agrees(model, io::read_sentencepiece_model(model), reading.file, reading.vocabulary);
  }
}

}  // namespace detail

tokenizer_reading read_folder_tokenizer(const std::filesystem::path& folder,
                                        const nlohmann::ordered_json* tokenizer_config) {
  const std::optional<io::vocabulary_source> source = io::find_vocabulary_file(folder);
  if (!source) io::no_vocabulary_file(folder);
  tokenizer_reading reading = detail::read_vocabulary_source(*source, tokenizer_config);
  detail::check_models_beside(folder, reading);
  return reading;
}

tokenizer_reading read_tokenizer(const std::filesystem::path& path) {
  if (std::filesystem::is_directory(path)) {
    // tokenizer_config.json tells only a vocab.json's or a vocab.txt's spelling.
    const std::optional<io::vocabulary_source> source = io::find_vocabulary_file(path);
    const auto config =
        source && detail::needs_tokenizer_config(*source) ? tokenizer_config_beside(source->file) : std::nullopt;
    return read_folder_tokenizer(path, config ? &*config : nullptr);
  }
  if (!std::filesystem::exists(path)) io::missing_path(path);
  if (path.extension() == ".model") return detail::read_sentencepiece_file(path);
  if (path.filename() == "vocab.txt") {
    const auto config = tokenizer_config_beside(path);
    return detail::read_vocab_txt_file(path, config ? &*config : nullptr);
  }
  if (path.filename() == "encoder.json") return detail::read_vocab_file(path, nullptr);
  if (path.filename() == "vocab.json") {
    const auto config = tokenizer_config_beside(path);
    return detail::read_vocab_file(path, config ? &*config : nullptr);
  }
  // Any other JSON file is a tokenizer.json or a vocab.json: one pass reads it and tells which.
  io::json_vocabulary read = io::read_json_vocabulary(path);
  if (read.is_tokenizer_json)
    return {path, std::move(read.contents.vocabulary), spelling_from_declarations(read.contents.declarations), {}};
  const auto config = tokenizer_config_beside(path);
  return {path, std::move(read.contents.vocabulary), spelling_of_vocab_file(path, config ? &*config : nullptr), {}};
}

}  // namespace clp_transfer
