// The values a pickle builds as io/torch/pickle/machine.hpp reads it: plain data (None, booleans,
// 64-bit integers, floats, strings, bytes, tuples, lists, dicts), the names of globals, and the
// objects a format's hooks make (a tensor, a storage). A value is shared by every place of the
// stack and the memo that holds it; once put into another value it is frozen, so that no value
// ever contains itself.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace clp_transfer::io {

struct pickle_value;
using pickle_ref = std::shared_ptr<pickle_value>;

/// A value a pickle builds.
struct pickle_value {
  enum class kind { none, boolean, integer, floating, string, bytes, tuple, list, dict, global, object };
  kind type = kind::none;
  bool boolean = false;
  std::int64_t integer = 0;
  double floating = 0;
  /// string and bytes: the contents (a string's as UTF-8); global: "module.name"; object: what
  /// the hooks made it ("tensor", "storage").
  std::string text;
  /// tuple and list: the items; dict: keys and values alternating, in insertion order; object:
  /// whatever the hooks keep in it.
  std::vector<pickle_ref> items;
  bool ordered = false;  ///< dict: made by the hooks as an OrderedDict
  /// Put into another value: its items are final.
  bool frozen = false;
  /// Nesting: 1 for a value without items.
  std::size_t depth = 1;

  bool is(kind k) const { return type == k; }
};

/// A value of the hooks' own (a tensor, a storage) holding `items`, which are final from then on.
/// @param[in] what   what it is, kept in pickle_value::text
/// @param[in] items  values it keeps
pickle_ref make_pickle_object(std::string what, std::vector<pickle_ref> items);

}  // namespace clp_transfer::io
