#include "io/embedding_names.hpp"

namespace clp_transfer::io {

namespace detail {

void require_tensor(const std::filesystem::path& where, const std::vector<std::string>& names,
                    const std::string& name) {
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw clp::invalid_argument(about(where),
                                "no tensor " + quoted_name(name) + " (named explicitly) in the checkpoint");
}

}  // namespace detail

std::string find_input_embedding(const std::filesystem::path& where, const std::vector<std::string>& names,
                                 const std::string& explicit_name) {
  if (!explicit_name.empty()) {
    detail::require_tensor(where, names, explicit_name);
    return explicit_name;
  }
  if (auto found = detail::find_embedding(where, names, input_embedding_suffixes, "input embedding")) return *found;
  std::string list;
  for (std::string_view suffix : input_embedding_suffixes) list += (list.empty() ? "" : ", ") + std::string(suffix);
  malformed(where, "no input embedding among " + std::to_string(names.size()) +
                       " tensors (looked for names ending in " + list + "); name it explicitly");
}

std::optional<std::string> find_output_embedding(const std::filesystem::path& where,
                                                 const std::vector<std::string>& names,
                                                 const std::string& explicit_name) {
  if (!explicit_name.empty()) {
    detail::require_tensor(where, names, explicit_name);
    return explicit_name;
  }
  return detail::find_embedding(where, names, output_embedding_suffixes, "output head");
}

}  // namespace clp_transfer::io
