// The pickle of a torch checkpoint (data.pkl of a pytorch_model.bin), read as a state dict of
// tensors by io/torch/pickle/machine.hpp with an allow-list of the globals torch.save writes for one:
//   collections.OrderedDict                  the dict itself, and a tensor's empty hook dict
//   torch._utils._rebuild_tensor_v2          a tensor: (storage, storage offset, size, stride,
//                                            requires_grad, backward hooks[, metadata])
//   torch._utils._rebuild_parameter          an nn.Parameter around such a tensor
//   torch.FloatStorage, torch.HalfStorage, torch.BFloat16Storage, torch.DoubleStorage,
//   torch.LongStorage, torch.IntStorage, torch.ShortStorage, torch.CharStorage,
//   torch.ByteStorage, torch.BoolStorage     the element type of a storage, named in its
//                                            persistent id ('storage', type, key, location, numel)
// Any other global is refused by its name when the pickle names it, before anything else
// happens; none of these is called either: each is a name whose arguments this reader
// interprets. Every refusal is a malformed_file naming the file and the record.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "io/errors.hpp"
#include "io/library_names.hpp"
#include "io/safetensors/format.hpp"
#include "io/system/utf8.hpp"
#include "io/torch/pickle/machine.hpp"

namespace clp_transfer::io {

/// One tensor of a state dict as the pickle describes it; its bytes are in the record
/// data/<storage_key> of the archive.
struct torch_tensor_record {
  std::string name;
  std::string storage_key;
  io::dtype dtype = io::dtype::f32;    ///< the storage's element type
  std::uint64_t storage_elements = 0;  ///< elements the storage holds
  std::int64_t storage_offset = 0;     ///< of the tensor's first element, in elements
  std::vector<std::int64_t> shape, stride;
};

namespace detail {

/// The storage types of the allow-list, by their name in the torch module, and their dtypes.
inline constexpr std::array<std::pair<std::string_view, dtype>, 10> torch_storage_types = {{
    {"FloatStorage", dtype::f32},
    {"DoubleStorage", dtype::f64},
    {"HalfStorage", dtype::f16},
    {"BFloat16Storage", dtype::bf16},
    {"LongStorage", dtype::i64},
    {"IntStorage", dtype::i32},
    {"ShortStorage", dtype::i16},
    {"CharStorage", dtype::i8},
    {"ByteStorage", dtype::u8},
    {"BoolStorage", dtype::boolean},
}};

inline constexpr std::string_view ordered_dict_global = "collections.OrderedDict";
inline constexpr std::string_view rebuild_tensor_global = "torch._utils._rebuild_tensor_v2";
inline constexpr std::string_view rebuild_parameter_global = "torch._utils._rebuild_parameter";

/// The dtype of storage type `global` ("torch.HalfStorage"), or nullopt for another name.
std::optional<dtype> torch_storage_dtype(std::string_view global);

/// The allow-list and what each of its names does, for pickle_machine.
class torch_pickle_hooks final : public pickle_hooks {
 public:
  torch_pickle_hooks(const std::filesystem::path& file, std::string record) : file_(file), record_(std::move(record)) {}

  pickle_ref find_global(const std::string& module, const std::string& name) override {
    const std::string global = module + "." + name;
    if (global != ordered_dict_global && global != rebuild_tensor_global && global != rebuild_parameter_global &&
        !torch_storage_dtype(global))
      fail("names the global " + quoted_name(global) +
           ", which is not one a torch state dict uses: refused, nothing in the file was run");
    auto value = std::make_shared<pickle_value>();
    value->type = pickle_value::kind::global;
    value->text = global;
    return value;
  }

  pickle_ref call(const pickle_value& callable, const pickle_value& arguments) override {
    if (callable.text == ordered_dict_global) {
      if (!arguments.items.empty()) fail("calls collections.OrderedDict with arguments");
      auto dict = std::make_shared<pickle_value>();
      dict->type = pickle_value::kind::dict;
      dict->ordered = true;
      return dict;
    }
    if (callable.text == rebuild_tensor_global) return rebuild_tensor(arguments);
    if (callable.text == rebuild_parameter_global) {
      const auto& a = arguments.items;
      if (a.size() != 3 || !a[0]->is(pickle_value::kind::object) || a[0]->text != "tensor" ||
          !a[1]->is(pickle_value::kind::boolean) || !a[2]->is(pickle_value::kind::dict))
        fail("calls " + callable.text + " with other arguments than (tensor, requires_grad, hooks)");
      return a[0];
    }
    fail("calls " + callable.text + ", which torch names only in a storage's persistent id");
  }

  pickle_ref persistent_load(const pickle_value& id) override {
    using kind = pickle_value::kind;
    const auto& a = id.items;
    if (!id.is(kind::tuple) || a.size() != 5 || !a[0]->is(kind::string) || a[0]->text != "storage" ||
        !a[1]->is(kind::global) || !torch_storage_dtype(a[1]->text) || !a[2]->is(kind::string) ||
        !a[3]->is(kind::string) || !a[4]->is(kind::integer) || a[4]->integer < 0)
      fail("a persistent id that is not ('storage', storage type, key, location, element count)");
    return make_pickle_object("storage", {a[1], a[2], a[4]});
  }

  void build(pickle_value& target, const pickle_value& state) override {
    // OrderedDict's state is its instance dict: a state dict's _metadata (module versions).
    if (!target.is(pickle_value::kind::dict) || !target.ordered ||
        !(state.is(pickle_value::kind::dict) || state.is(pickle_value::kind::none)))
      fail("BUILD of something other than an OrderedDict's attributes");
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const { malformed(file_, record_ + " " + problem); }

  /// _rebuild_tensor_v2's arguments, checked, as a "tensor" object of (storage, offset, size, stride).
  pickle_ref rebuild_tensor(const pickle_value& arguments) {
    using kind = pickle_value::kind;
    const auto& a = arguments.items;
    const auto integers = [](const pickle_ref& tuple) {
      if (!tuple->is(kind::tuple)) return false;
      for (const pickle_ref& item : tuple->items)
        if (!item->is(kind::integer)) return false;
      return true;
    };
    if ((a.size() != 6 && a.size() != 7) || !a[0]->is(kind::object) || a[0]->text != "storage" ||
        !a[1]->is(kind::integer) || !integers(a[2]) || !integers(a[3]) || a[2]->items.size() != a[3]->items.size() ||
        !a[4]->is(kind::boolean) || !a[5]->is(kind::dict) ||
        (a.size() == 7 && !a[6]->is(kind::dict) && !a[6]->is(kind::none)))
      fail("calls " + std::string(rebuild_tensor_global) +
           " with other arguments than (storage, offset, size, stride, requires_grad, hooks[, metadata])");
    return make_pickle_object("tensor", {a[0], a[1], a[2], a[3]});
  }

  const std::filesystem::path& file_;
  std::string record_;
};

/// A tuple of integers as a vector.
std::vector<std::int64_t> integers_of(const pickle_value& tuple);

/// The record of the "tensor" object `tensor`, called `name`.
torch_tensor_record tensor_record(std::string name, const pickle_value& tensor);

}  // namespace detail

/// The tensors of the state dict pickled in `bytes`, in the dict's order: its keys must be
/// distinct UTF-8 strings and its values tensors.
/// @param[in] file    the checkpoint, for messages
/// @param[in] record  the pickle's record in it ("archive/data.pkl"), for messages
/// @param[in] bytes   the pickle
std::vector<torch_tensor_record> read_torch_state_dict(const std::filesystem::path& file, const std::string& record,
                                                       std::string_view bytes);

}  // namespace clp_transfer::io
