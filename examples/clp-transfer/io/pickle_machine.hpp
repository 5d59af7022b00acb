// A pickle read without running it: a small interpreter of the opcodes of pickle protocols 2 to
// 5 that builds plain values (None, booleans, 64-bit integers, floats, strings, bytes, tuples,
// lists, dicts) and leaves every global, call, persistent id and BUILD to a pickle_hooks object
// of the caller's, which allows the few names its format uses and refuses every other. Nothing
// is imported, called or executed: a global is a name, a call is the hooks' interpretation of
// a name and its arguments.
//
// Hardened for hostile input: every read is bounds-checked; the values a pickle may create, the
// memo, the stack and the nesting are bounded; a container can gain items only until it is put
// into another one (as pickle writes them), so no value ever contains itself. Opcodes no
// torch.save writes (protocol 0 and 1 text opcodes, INST, OBJ, NEWOBJ, the extension registry,
// out-of-band buffers) are refused by name; INST names its global, which is refused as a
// global is. Every refusal is a clp::malformed_file naming the file, the record and the byte.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/errors.hpp"
#include "library_names.hpp"

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
inline pickle_ref make_pickle_object(std::string what, std::vector<pickle_ref> items) {
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

/// What a format allows a pickle to name and do. Each member returns the value its opcode
/// pushes, or throws (clp::malformed_file naming the file) to refuse.
class pickle_hooks {
 public:
  virtual ~pickle_hooks() = default;
  /// GLOBAL and STACK_GLOBAL: the value that stands for `module`.`name`.
  virtual pickle_ref find_global(const std::string& module, const std::string& name) = 0;
  /// REDUCE: `callable` (a value find_global returned) applied to `arguments` (a tuple).
  virtual pickle_ref call(const pickle_value& callable, const pickle_value& arguments) = 0;
  /// BINPERSID: the object a persistent id stands for.
  virtual pickle_ref persistent_load(const pickle_value& id) = 0;
  /// BUILD: `state` given to `target`.
  virtual void build(pickle_value& target, const pickle_value& state) = 0;
};

/// Bounds on what one pickle may build, and so on the memory it takes.
struct pickle_limits {
  /// Values created, put into containers, or made by the hooks (a state dict takes about 30
  /// per tensor).
  std::size_t values = 2'000'000;
  std::size_t depth = 1000;        ///< nesting of containers
  std::size_t memo = 4'000'000;    ///< memo entries
};

/// Reads one pickle. Usage: pickle_machine(file, record, bytes, hooks).run().
class pickle_machine {
 public:
  /// @param[in] file    the file holding the pickle, for messages
  /// @param[in] record  where the pickle is in it, for messages: "archive/data.pkl"
  /// @param[in] bytes   the pickle; must outlive the machine
  /// @param[in] hooks   what the format allows
  pickle_machine(const std::filesystem::path& file, std::string record, std::string_view bytes, pickle_hooks& hooks,
                 pickle_limits limits = {})
      : file_(file), record_(std::move(record)), bytes_(bytes), hooks_(hooks), limits_(limits) {}

  /// Runs the pickle to its STOP; returns the value it leaves. Throws clp::malformed_file naming
  /// the file for anything the pickle does that is not plain data or allowed by the hooks.
  pickle_ref run() {
    for (;;) {
      if (at_ == bytes_.size()) fail("the pickle ends without STOP");
      opcode_at_ = at_;
      const auto op = static_cast<unsigned char>(bytes_[at_++]);
      if (op == '.') break;
      if (!scalar(op) && !container(op) && !memo(op) && !object(op)) refuse_opcode(op);
    }
    if (stack_.size() != 1 || !marks_.empty())
      fail("STOP with " + std::to_string(stack_.size()) + " values and " + std::to_string(marks_.size()) +
           " marks on the stack, not one value");
    return stack_.back();
  }

 private:
  using kind = pickle_value::kind;

  [[noreturn]] void fail(const std::string& problem) const {
    malformed(file_, record_ + " byte " + std::to_string(opcode_at_) + ": " + problem);
  }

  // --- reading the pickle's bytes

  std::string_view take(std::uint64_t size) {
    if (size > bytes_.size() - at_) fail("the pickle ends inside an opcode's argument");
    const std::string_view taken = bytes_.substr(at_, static_cast<std::size_t>(size));
    at_ += static_cast<std::size_t>(size);
    return taken;
  }
  std::uint64_t unsigned_le(std::size_t size) {
    const std::string_view b = take(size);
    std::uint64_t value = 0;
    for (std::size_t i = size; i-- > 0;) value = (value << 8) | static_cast<unsigned char>(b[i]);
    return value;
  }
  /// A line ended by '\n' (GLOBAL's and INST's names).
  std::string line() {
    const std::size_t end = bytes_.find('\n', at_);
    if (end == std::string_view::npos) fail("the pickle ends inside a global's name");
    std::string text(bytes_.substr(at_, end - at_));
    at_ = end + 1;
    return text;
  }

  // --- values and the stack

  /// Counts one more value against limits_.values.
  void grow() {
    if (++made_ > limits_.values)
      fail("more than " + std::to_string(limits_.values) + " values (corrupt or hostile pickle?)");
  }
  pickle_ref make(kind type) {
    grow();
    auto value = std::make_shared<pickle_value>();
    value->type = type;
    return value;
  }
  void push(pickle_ref value) {
    if (stack_.size() >= limits_.values) fail("a stack of more than " + std::to_string(limits_.values) + " values");
    stack_.push_back(std::move(value));
  }
  pickle_ref pop() {
    if (stack_.size() == (marks_.empty() ? 0 : marks_.back())) fail("an opcode takes a value the stack does not hold");
    pickle_ref value = std::move(stack_.back());
    stack_.pop_back();
    return value;
  }
  pickle_value& top() {
    if (stack_.size() == (marks_.empty() ? 0 : marks_.back())) fail("an opcode takes a value the stack does not hold");
    return *stack_.back();
  }
  /// The values above the last mark, which is removed.
  std::vector<pickle_ref> pop_mark() {
    if (marks_.empty()) fail("an opcode takes the values since a MARK, and there is none");
    const std::size_t from = marks_.back();
    marks_.pop_back();
    std::vector<pickle_ref> values(std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(from)),
                                   std::make_move_iterator(stack_.end()));
    stack_.resize(from);
    return values;
  }

  /// Puts `item` into `container` (which must still be open), freezing it.
  void adopt(pickle_value& container, pickle_ref item) {
    if (container.frozen || item.get() == &container)
      fail("adds to a container after it was used, or to itself (a value that would contain itself)");
    grow();
    if (item->depth + 1 > limits_.depth)
      fail("values nested deeper than " + std::to_string(limits_.depth) + " levels (corrupt or hostile pickle?)");
    item->frozen = true;
    container.depth = std::max(container.depth, item->depth + 1);
    container.items.push_back(std::move(item));
  }
  pickle_ref sequence(kind type, std::vector<pickle_ref> items) {
    pickle_ref value = make(type);
    for (pickle_ref& item : items) adopt(*value, std::move(item));
    return value;
  }
  /// Adds key, value pairs to `dict`. A key given twice is kept twice (Python would keep the
  /// last value): the reader of the dict decides whether that is an error.
  void set_items(pickle_value& dict, std::vector<pickle_ref> pairs) {
    if (!dict.is(kind::dict)) fail("SETITEM(S) on a value that is not a dict");
    if (pairs.size() % 2 != 0) fail("SETITEMS with a key without a value");
    for (pickle_ref& item : pairs) adopt(dict, std::move(item));
  }

  bool scalar(unsigned char op);
  bool container(unsigned char op);
  bool memo(unsigned char op);
  bool object(unsigned char op);
  [[noreturn]] void refuse_opcode(unsigned char op);
  pickle_ref text_value(kind type, std::uint64_t size);
  pickle_ref long_value(std::uint64_t size);

  const std::filesystem::path& file_;
  std::string record_;
  std::string_view bytes_;
  pickle_hooks& hooks_;
  pickle_limits limits_;
  std::size_t at_ = 0, opcode_at_ = 0, made_ = 0;
  std::vector<pickle_ref> stack_;
  std::vector<std::size_t> marks_;  // stack sizes at each MARK
  std::unordered_map<std::uint64_t, pickle_ref> memo_;
};

inline pickle_ref pickle_machine::text_value(kind type, std::uint64_t size) {
  pickle_ref value = make(type);
  value->text = std::string(take(size));
  return value;
}

/// LONG1: a little-endian two's complement integer of `size` bytes, at most 8.
inline pickle_ref pickle_machine::long_value(std::uint64_t size) {
  if (size > 8) fail("an integer of " + std::to_string(size) + " bytes, wider than 64 bits");
  const std::string_view b = take(size);
  std::uint64_t bits = 0;
  for (std::size_t i = b.size(); i-- > 0;) bits = (bits << 8) | static_cast<unsigned char>(b[i]);
  if (size > 0 && size < 8 && (static_cast<unsigned char>(b.back()) & 0x80)) bits |= ~std::uint64_t{0} << (8 * size);
  pickle_ref value = make(kind::integer);
  std::memcpy(&value->integer, &bits, sizeof bits);
  return value;
}

/// The opcodes that push one plain value, and PROTO, FRAME, POP, DUP.
inline bool pickle_machine::scalar(unsigned char op) {
  switch (op) {
    case 0x80:  // PROTO
      if (const std::uint64_t version = unsigned_le(1); version < 2 || version > 5)
        fail("pickle protocol " + std::to_string(version) + " (torch writes 2 to 5)");
      return true;
    case 0x95:  // FRAME: a length that only helps a reader buffer
      unsigned_le(8);
      return true;
    case 'N':
      push(make(kind::none));
      return true;
    case 0x88:  // NEWTRUE
    case 0x89: {  // NEWFALSE
      pickle_ref value = make(kind::boolean);
      value->boolean = op == 0x88;
      push(std::move(value));
      return true;
    }
    case 'J':  // BININT
    case 'K':  // BININT1
    case 'M': {  // BININT2
      pickle_ref value = make(kind::integer);
      const std::uint64_t bits = unsigned_le(op == 'J' ? 4 : op == 'K' ? 1 : 2);
      value->integer = op == 'J' ? static_cast<std::int32_t>(static_cast<std::uint32_t>(bits))
                                 : static_cast<std::int64_t>(bits);
      push(std::move(value));
      return true;
    }
    case 0x8a:  // LONG1
      push(long_value(unsigned_le(1)));
      return true;
    case 0x8b:  // LONG4
      push(long_value(unsigned_le(4)));
      return true;
    case 'G': {  // BINFLOAT, big-endian
      const std::string_view b = take(8);
      std::uint64_t bits = 0;
      for (char c : b) bits = (bits << 8) | static_cast<unsigned char>(c);
      pickle_ref value = make(kind::floating);
      std::memcpy(&value->floating, &bits, sizeof bits);
      push(std::move(value));
      return true;
    }
    case 'X':  // BINUNICODE
    case 0x8c:  // SHORT_BINUNICODE
    case 0x8d:  // BINUNICODE8
      push(text_value(kind::string, unsigned_le(op == 'X' ? 4 : op == 0x8c ? 1 : 8)));
      return true;
    case 'B':  // BINBYTES
    case 'C':  // SHORT_BINBYTES
    case 0x8e:  // BINBYTES8
      push(text_value(kind::bytes, unsigned_le(op == 'B' ? 4 : op == 'C' ? 1 : 8)));
      return true;
    case '0':  // POP
      if (!marks_.empty() && stack_.size() == marks_.back())
        marks_.pop_back();  // as Python's: POP of an empty frame drops its MARK
      else
        pop();
      return true;
    case '2':  // DUP
      top();  // refuses an empty stack
      push(pickle_ref(stack_.back()));
      return true;
    default:
      return false;
  }
}

/// The opcodes that build tuples, lists and dicts, and MARK.
inline bool pickle_machine::container(unsigned char op) {
  switch (op) {
    case '(':  // MARK
      if (marks_.size() >= limits_.depth) fail("more than " + std::to_string(limits_.depth) + " open MARKs");
      marks_.push_back(stack_.size());
      return true;
    case '1':  // POP_MARK
      pop_mark();
      return true;
    case ')':  // EMPTY_TUPLE
      push(make(kind::tuple));
      return true;
    case 't':  // TUPLE
      push(sequence(kind::tuple, pop_mark()));
      return true;
    case 0x85:  // TUPLE1
    case 0x86:  // TUPLE2
    case 0x87: {  // TUPLE3
      std::vector<pickle_ref> items(static_cast<std::size_t>(op - 0x84));
      for (std::size_t i = items.size(); i-- > 0;) items[i] = pop();
      push(sequence(kind::tuple, std::move(items)));
      return true;
    }
    case ']':  // EMPTY_LIST
      push(make(kind::list));
      return true;
    case 'l':  // LIST
      push(sequence(kind::list, pop_mark()));
      return true;
    case 'a': {  // APPEND
      pickle_ref item = pop();
      pickle_value& list = top();
      if (!list.is(kind::list)) fail("APPEND to a value that is not a list");
      adopt(list, std::move(item));
      return true;
    }
    case 'e': {  // APPENDS
      std::vector<pickle_ref> items = pop_mark();
      pickle_value& list = top();
      if (!list.is(kind::list)) fail("APPENDS to a value that is not a list");
      for (pickle_ref& item : items) adopt(list, std::move(item));
      return true;
    }
    case '}':  // EMPTY_DICT
      push(make(kind::dict));
      return true;
    case 'd': {  // DICT
      pickle_ref dict = make(kind::dict);
      set_items(*dict, pop_mark());
      push(std::move(dict));
      return true;
    }
    case 's': {  // SETITEM
      pickle_ref value = pop();
      pickle_ref key = pop();
      std::vector<pickle_ref> pair{std::move(key), std::move(value)};
      set_items(top(), std::move(pair));
      return true;
    }
    case 'u': {  // SETITEMS
      std::vector<pickle_ref> pairs = pop_mark();
      set_items(top(), std::move(pairs));
      return true;
    }
    default:
      return false;
  }
}

/// The memo: PUT and GET in their binary forms, and MEMOIZE.
inline bool pickle_machine::memo(unsigned char op) {
  switch (op) {
    case 'q':  // BINPUT
    case 'r':  // LONG_BINPUT
    case 0x94: {  // MEMOIZE
      const std::uint64_t index = op == 0x94 ? memo_.size() : unsigned_le(op == 'q' ? 1 : 4);
      if (stack_.empty()) fail("memoizes with an empty stack");
      if (memo_.size() >= limits_.memo && !memo_.count(index))
        fail("more than " + std::to_string(limits_.memo) + " memo entries");
      memo_[index] = stack_.back();
      return true;
    }
    case 'h':  // BINGET
    case 'j': {  // LONG_BINGET
      const std::uint64_t index = unsigned_le(op == 'h' ? 1 : 4);
      const auto found = memo_.find(index);
      if (found == memo_.end()) fail("gets memo entry " + std::to_string(index) + ", which was never put");
      push(found->second);
      return true;
    }
    default:
      return false;
  }
}

/// Globals, calls, persistent ids and BUILD: what the hooks decide.
inline bool pickle_machine::object(unsigned char op) {
  switch (op) {
    case 'c': {  // GLOBAL
      std::string module = line();
      std::string name = line();
      grow();
      push(hooks_.find_global(module, name));
      return true;
    }
    case 0x93: {  // STACK_GLOBAL
      const pickle_ref name = pop();
      const pickle_ref module = pop();
      if (!module->is(kind::string) || !name->is(kind::string)) fail("STACK_GLOBAL of values that are not strings");
      grow();
      push(hooks_.find_global(module->text, name->text));
      return true;
    }
    case 'R': {  // REDUCE
      pickle_ref arguments = pop();
      const pickle_ref callable = pop();
      if (!callable->is(kind::global)) fail("REDUCE calls a value that is not a global");
      if (!arguments->is(kind::tuple)) fail("REDUCE with arguments that are not a tuple");
      arguments->frozen = true;
      grow();
      push(hooks_.call(*callable, *arguments));
      return true;
    }
    case 'Q': {  // BINPERSID
      pickle_ref id = pop();
      id->frozen = true;
      grow();
      push(hooks_.persistent_load(*id));
      return true;
    }
    case 'b': {  // BUILD
      pickle_ref state = pop();
      state->frozen = true;
      pickle_value& target = top();
      if (target.frozen) fail("BUILD of a value after it was used");
      hooks_.build(target, *state);
      return true;
    }
    case 'i': {  // INST: names a class, like GLOBAL, and calls it; the hooks refuse the name
      std::string module = line();
      std::string name = line();
      hooks_.find_global(module, name);
      fail("INST of " + module + "." + name + " (torch.save does not write INST)");
    }
    default:
      return false;
  }
}

/// Refuses an opcode the reader does not take, by its name.
inline void pickle_machine::refuse_opcode(unsigned char op) {
  static const std::pair<unsigned char, const char*> names[] = {
      {'I', "INT"},       {'L', "LONG"},         {'F', "FLOAT"},          {'S', "STRING"},
      {'T', "BINSTRING"}, {'U', "SHORT_BINSTRING"}, {'V', "UNICODE"},     {'p', "PUT"},
      {'g', "GET"},       {'P', "PERSID"},       {'o', "OBJ"},            {0x81, "NEWOBJ"},
      {0x92, "NEWOBJ_EX"}, {0x82, "EXT1"},       {0x83, "EXT2"},          {0x84, "EXT4"},
      {0x8f, "EMPTY_SET"}, {0x90, "ADDITEMS"},   {0x91, "FROZENSET"},     {0x96, "BYTEARRAY8"},
      {0x97, "NEXT_BUFFER"}, {0x98, "READONLY_BUFFER"}};
  static constexpr char hex[] = "0123456789abcdef";
  std::string named = std::string("0x") + hex[op >> 4] + hex[op & 15];
  for (const auto& [code, name] : names)
    if (code == op) named = name;
  fail("opcode " + named + ", which no torch.save writes");
}

}  // namespace clp_transfer::io
