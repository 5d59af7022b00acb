#include "io/torch/pickle/value.hpp"

namespace clp_transfer::io {

pickle_ref make_pickle_object(std::string what, std::vector<pickle_ref> items) {
  auto value = std::make_shared<pickle_value>();
  value->type = pickle_value::kind::object;
  value->text = std::move(what);
  for (const pickle_ref& item : items) {
    item->frozen = true;
    value->depth = std::max(value->depth, item->depth + 1);
  }
  value->items = std::move(items);
  value->frozen = true;
  return value;
}

}  // namespace clp_transfer::io
