// The pickle interpreter's stack of values and MARKs, and the one place its values are made and
// nested. Every value a pickle creates, puts into a container, or has the hooks make is counted
// against pickle_limits, and so are the nesting of values and the MARKs open, so that the memory
// a hostile pickle takes is bounded. A container can gain items only until it is put into
// another value (as pickle writes them), so no value ever contains itself. Every refusal is a
// malformed_file naming the file, the record and the byte of the opcode being run.
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/torch/pickle/opcodes.hpp"
#include "io/torch/pickle/value.hpp"

namespace clp_transfer::io {

/// Bounds on what one pickle may build, and so on the memory it takes.
struct pickle_limits {
  /// Values created, put into containers, or made by the hooks (a state dict takes about 30
  /// per tensor).
  std::size_t values = 2'000'000;
  std::size_t depth = 1000;      ///< nesting of containers, and MARKs open at once
  std::size_t memo = 4'000'000;  ///< memo entries (the memo is pickle_machine's)
};

/// The values an opcode takes and pushes, with pickle's MARKs: an opcode takes values only
/// above the last MARK, and the opcodes that take "the values since a MARK" remove it.
class pickle_stack {
 public:
  using kind = pickle_value::kind;

  /// @param[in] site    where refusals point; must outlive the stack
  /// @param[in] limits  what the pickle may build
  pickle_stack(const pickle_site& site, pickle_limits limits) : site_(site), limits_(limits) {}

  const pickle_limits& limits() const { return limits_; }
  /// Values on the stack, MARKs ignored.
  std::size_t size() const { return values_.size(); }
  /// MARKs open.
  std::size_t marks() const { return marks_.size(); }
  /// The value on top, MARKs ignored; size() must be at least 1.
  const pickle_ref& back() const { return values_.back(); }

  /// Counts one more value against limits().values.
  void grow() {
    if (++made_ > limits_.values)
      site_.fail("more than " + std::to_string(limits_.values) + " values (corrupt or hostile pickle?)");
  }
  /// A new, counted value of `type`, empty and open.
  pickle_ref make(kind type) {
    grow();
    auto value = std::make_shared<pickle_value>();
    value->type = type;
    return value;
  }
  void push(pickle_ref value) {
    if (values_.size() >= limits_.values)
      site_.fail("a stack of more than " + std::to_string(limits_.values) + " values");
    values_.push_back(std::move(value));
  }
  /// Removes and returns the value on top, which must be above the last MARK.
  pickle_ref pop() {
    top();  // refuses a value below the last MARK
    pickle_ref value = std::move(values_.back());
    values_.pop_back();
    return value;
  }
  /// The value on top, which must be above the last MARK.
  const pickle_ref& top() const {
    if (values_.size() == (marks_.empty() ? 0 : marks_.back()))
      site_.fail("an opcode takes a value the stack does not hold");
    return values_.back();
  }
  /// POP: the value on top; as Python's, the last MARK itself when nothing is above it.
  void pop_value_or_mark() {
    if (!marks_.empty() && values_.size() == marks_.back())
      marks_.pop_back();
    else
      pop();
  }

  /// MARK: opens a frame for the values that follow.
  void mark() {
    if (marks_.size() >= limits_.depth) site_.fail("more than " + std::to_string(limits_.depth) + " open MARKs");
    marks_.push_back(values_.size());
  }
  /// The values above the last MARK, which is removed.
  std::vector<pickle_ref> pop_mark() {
    if (marks_.empty()) site_.fail("an opcode takes the values since a MARK, and there is none");
    const std::size_t from = marks_.back();
    marks_.pop_back();
    std::vector<pickle_ref> values(std::make_move_iterator(values_.begin() + static_cast<std::ptrdiff_t>(from)),
                                   std::make_move_iterator(values_.end()));
    values_.resize(from);
    return values;
  }

  /// Puts `item` into `container` (which must still be open), freezing the item.
  void adopt(pickle_value& container, pickle_ref item) {
    if (container.frozen || item.get() == &container)
      site_.fail("adds to a container after it was used, or to itself (a value that would contain itself)");
    grow();
    if (item->depth + 1 > limits_.depth)
      site_.fail("values nested deeper than " + std::to_string(limits_.depth) + " levels (corrupt or hostile pickle?)");
    item->frozen = true;
    container.depth = std::max(container.depth, item->depth + 1);
    container.items.push_back(std::move(item));
  }

 private:
  const pickle_site& site_;
  pickle_limits limits_;
  std::size_t made_ = 0;
  std::vector<pickle_ref> values_;
  std::vector<std::size_t> marks_;  // values_.size() at each MARK
};

}  // namespace clp_transfer::io
