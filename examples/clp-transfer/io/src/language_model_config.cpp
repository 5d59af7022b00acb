#include "io/language_model_config.hpp"

namespace clp_transfer {

const std::vector<std::vector<std::string>>& language_model_config_paths() {
  static const std::vector<std::vector<std::string>> paths = {
      {"text_config"}, {"thinker_config", "text_config"}, {"llm_config"}, {"language_config"}};
  return paths;
}

bool is_vocabulary_id_key(std::string_view key) {
  for (std::string_view special : special_token_keys)
    if (key == special) return false;
  for (std::string_view ending :
       {std::string_view("_token_index"), std::string_view("_token_id"), std::string_view("_token_ids")})
    if (key.size() > ending.size() && key.substr(key.size() - ending.size()) == ending) return true;
  return false;
}

std::vector<std::string> language_model_config_path(const nlohmann::ordered_json& config) {
  for (const std::vector<std::string>& path : language_model_config_paths()) {
    const nlohmann::ordered_json* at = &config;
    for (const std::string& key : path) {
      if (!at->is_object() || !at->contains(key)) {
        at = nullptr;
        break;
      }
      at = &(*at)[key];
    }
    if (at && at->is_object()) return path;
  }
  return {};
}

namespace detail {

std::string path_text(const std::vector<std::string>& path) {
  std::string text;
  for (const std::string& part : path) text += (text.empty() ? "" : ".") + part;
  return text;
}

std::string dotted(const std::vector<std::string>& path, std::string_view key) {
  std::string text;
  for (const std::string& part : path) text += part + ".";
  return text + std::string(key);
}

const nlohmann::ordered_json& at_path(const nlohmann::ordered_json& config, const std::vector<std::string>& path) {
  const nlohmann::ordered_json* at = &config;
  for (const std::string& key : path) at = &(*at)[key];
  return *at;
}

nlohmann::ordered_json& at_path(nlohmann::ordered_json& config, const std::vector<std::string>& path) {
  nlohmann::ordered_json* at = &config;
  for (const std::string& key : path) at = &(*at)[key];
  return *at;
}

std::optional<found_value> find_model_value(const nlohmann::ordered_json& config, std::string_view key) {
  const std::vector<std::string> path = language_model_config_path(config);
  const std::string name(key);
  const nlohmann::ordered_json& nested = at_path(config, path);
  if (nested.contains(name)) return found_value{dotted(path, key), &nested[name]};
  if (!path.empty() && config.is_object() && config.contains(name)) return found_value{name, &config[name]};
  return std::nullopt;
}

std::int64_t positive_value(const found_value& found, const std::filesystem::path& file) {
  const auto value = io::as_int64(*found.value);
  if (!value || *value <= 0)
    io::malformed(file, found.where + " is " + io::json_excerpt(*found.value) + ", not a positive integer");
  return *value;
}

}  // namespace detail

std::optional<std::int64_t> language_model_vocab_size(const nlohmann::ordered_json& config,
                                                      const std::filesystem::path& file) {
  const auto found = detail::find_model_value(config, "vocab_size");
  if (!found) return std::nullopt;
  return detail::positive_value(*found, file);
}

std::int64_t language_model_hidden_size(const nlohmann::ordered_json& config, const std::filesystem::path& file) {
  const std::vector<std::string> path = language_model_config_path(config);
  const nlohmann::ordered_json& nested = detail::at_path(config, path);
  for (const nlohmann::ordered_json* level : {&nested, &config}) {
    if (!level->is_object()) continue;
    for (std::string_view key : hidden_size_keys)
      if (level->contains(std::string(key)))
        return detail::positive_value(
            {detail::dotted(level == &nested ? path : std::vector<std::string>{}, key), &(*level)[std::string(key)]},
            file);
  }
  std::string list;
  for (std::string_view key : hidden_size_keys) list += (list.empty() ? "" : " or ") + std::string(key);
  if (!path.empty()) list += " (looked in " + detail::path_text(path) + " and at the top level)";
  io::malformed(file, "no " + list);
}

nlohmann::ordered_json language_model_special_token_ids(const nlohmann::ordered_json& config) {
  nlohmann::ordered_json ids = nlohmann::ordered_json::object();
  for (std::string_view key : special_token_keys)
    if (const auto found = detail::find_model_value(config, key)) ids[std::string(key)] = *found->value;
  return ids;
}

transferred_config transfer_config(const nlohmann::ordered_json& source, const nlohmann::ordered_json& helper,
                                   std::int64_t target_rows,
                                   const std::unordered_map<std::string, std::int64_t>& source_tokens,
                                   const std::unordered_map<std::string, std::int64_t>& target_tokens) {
  transferred_config out;
  out.config = source;
  const std::vector<std::string> path = language_model_config_path(source);
  const nlohmann::ordered_json helper_ids = language_model_special_token_ids(helper);

  // other token ids, by token string
  auto token_of = [&](std::int64_t id) -> std::optional<std::string> {
    for (const auto& [token, token_id] : source_tokens)
      if (token_id == id) return token;
    return std::nullopt;
  };
  auto carry = [&](const std::string& where, std::int64_t id) -> std::optional<std::int64_t> {
    token_id_change change{where, id, token_of(id), std::nullopt};
    if (change.token)
      if (const auto hit = target_tokens.find(*change.token); hit != target_tokens.end())
        change.target_id = hit->second;
    out.token_ids.push_back(change);
    return change.target_id;
  };
  auto rewrite_level = [&](nlohmann::ordered_json& level, const std::vector<std::string>& level_path) {
    std::vector<std::string> removed;
    for (auto item = level.begin(); item != level.end(); ++item) {
      if (!is_vocabulary_id_key(item.key())) continue;
      const std::string where = detail::dotted(level_path, item.key());
      if (const auto id = io::as_int64(item.value())) {
        if (*id < 0) continue;
        if (const auto target = carry(where, *id))
          item.value() = *target;
        else
          removed.push_back(item.key());
      } else if (item.value().is_array()) {
        nlohmann::ordered_json kept = nlohmann::ordered_json::array();
        bool all_ids = true;
        for (const auto& element : item.value()) all_ids = all_ids && io::as_int64(element).has_value();
        if (!all_ids) continue;
        for (const auto& element : item.value()) {
          const std::int64_t id = *io::as_int64(element);
          if (id < 0) {
            kept.push_back(element);
          } else if (const auto target = carry(where, id)) {
            kept.push_back(*target);
          }
        }
        if (kept.empty() && !item.value().empty())
          removed.push_back(item.key());
        else
          item.value() = std::move(kept);
      }
    }
    for (const std::string& key : removed) level.erase(key);
  };
  // The language-model config first, then (nested case) the top level: a change to the top
  // level's keys may move the nested object, so no reference to it outlives its block.
  {
    nlohmann::ordered_json& nested = detail::at_path(out.config, path);
    nested["vocab_size"] = target_rows;
    for (std::string_view key : special_token_keys) {
      const std::string name(key);
      if (helper_ids.contains(name))
        nested[name] = helper_ids[name];
      else
        nested.erase(name);
    }
    rewrite_level(nested, path);
  }
  if (!path.empty()) {
    if (source.contains("vocab_size")) out.config["vocab_size"] = target_rows;
    for (std::string_view key : special_token_keys) {
      const std::string name(key);
      if (!out.config.contains(name)) continue;
      if (helper_ids.contains(name))
        out.config[name] = helper_ids[name];
      else
        out.config.erase(name);
    }
    rewrite_level(out.config, {});
  }
  return out;
}

}  // namespace clp_transfer
