#include "io/torch/pickle.hpp"

namespace clp_transfer::io {

namespace detail {

std::optional<dtype> torch_storage_dtype(std::string_view global) {
  for (const auto& [name, type] : torch_storage_types)
    if (global.size() == 6 + name.size() && global.substr(0, 6) == "torch." && global.substr(6) == name) return type;
  return std::nullopt;
}

std::vector<std::int64_t> integers_of(const pickle_value& tuple) {
  std::vector<std::int64_t> values;
  for (const pickle_ref& item : tuple.items) values.push_back(item->integer);
  return values;
}

torch_tensor_record tensor_record(std::string name, const pickle_value& tensor) {
  const pickle_value& storage = *tensor.items[0];
  torch_tensor_record record;
  record.name = std::move(name);
  record.dtype = *torch_storage_dtype(storage.items[0]->text);
  record.storage_key = storage.items[1]->text;
  record.storage_elements = static_cast<std::uint64_t>(storage.items[2]->integer);
  record.storage_offset = tensor.items[1]->integer;
  record.shape = integers_of(*tensor.items[2]);
  record.stride = integers_of(*tensor.items[3]);
  return record;
}

}  // namespace detail

std::vector<torch_tensor_record> read_torch_state_dict(const std::filesystem::path& file, const std::string& record,
                                                       std::string_view bytes) {
  detail::torch_pickle_hooks hooks(file, record);
  const pickle_ref root = pickle_machine(file, record, bytes, hooks).run();
  using kind = pickle_value::kind;
  if (!root->is(kind::dict)) malformed(file, record + " holds no dict of tensor name -> tensor (no state dict)");
  std::vector<torch_tensor_record> tensors;
  std::unordered_set<std::string_view> names;
  for (std::size_t i = 0; i < root->items.size(); i += 2) {
    const pickle_value& key = *root->items[i];
    const pickle_value& value = *root->items[i + 1];
    if (!key.is(kind::string)) malformed(file, record + " has a state dict key that is not a string");
    if (!valid_utf8(key.text)) malformed(file, record + " has a tensor name that is not UTF-8");
    if (!names.insert(key.text).second)
      malformed(file, record + " gives the tensor name " + quoted_name(key.text) + " twice");
    if (!value.is(kind::object) || value.text != "tensor")
      malformed(file, record + " maps " + quoted_name(key.text) + " to something other than a tensor");
    tensors.push_back(detail::tensor_record(key.text, value));
  }
  return tensors;
}

}  // namespace clp_transfer::io
