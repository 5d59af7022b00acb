// SPDX-License-Identifier: MIT
#pragma once

// Internal: a string -> id hash table with open addressing, one allocation for a whole
// vocabulary (std::unordered_map allocates a node per token, which dominated intersecting
// 250k-token vocabularies). The keys are views; their characters must outlive the table.
#include <clp/detail/internal_header_check.hpp>

#include <clp/element_type.hpp>

#include <cstddef>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

namespace clp::detail {

class string_index {
 public:
  explicit string_index(std::size_t expected = 0) {
    std::size_t capacity = 16;
    while (capacity < expected + expected / 2 + 1) capacity *= 2;
    slots_.resize(capacity);
  }

  /// Inserts (key, id) unless the key is there; returns the id stored for the key and
  /// whether it was inserted.
  std::pair<Index*, bool> emplace(std::string_view key, Index id) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    const std::size_t hash = std::hash<std::string_view>()(key);
    for (std::size_t at = hash & (slots_.size() - 1);; at = (at + 1) & (slots_.size() - 1)) {
      slot& s = slots_[at];
      if (s.id < 0) {
        s = {hash, key, id};
        ++size_;
        return {&s.id, true};
      }
      if (s.hash == hash && s.key == key) return {&s.id, false};
    }
  }

  /// The id stored for `key`, or nullptr.
  const Index* find(std::string_view key) const {
    const std::size_t hash = std::hash<std::string_view>()(key);
    for (std::size_t at = hash & (slots_.size() - 1);; at = (at + 1) & (slots_.size() - 1)) {
      const slot& s = slots_[at];
      if (s.id < 0) return nullptr;
      if (s.hash == hash && s.key == key) return &s.id;
    }
  }

 private:
  struct slot {
    std::size_t hash = 0;
    std::string_view key;
    Index id = -1;  // -1: empty (stored ids are never negative)
  };
  void grow() {
    std::vector<slot> old(slots_.size() * 2);
    old.swap(slots_);
    size_ = 0;
    for (const slot& s : old)
      if (s.id >= 0) emplace(s.key, s.id);
  }
  std::vector<slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace clp::detail
