// The one place where the library's errors become the program's: the library names what it was
// given ('source', 'helper', "lm_head.weight source", the option 'k'); the program knows where
// each came from (a file and a tensor, a tokenizer file, an option such as --k) and says that
// instead, keeping the error's kind, row, column and problem. So a NaN the library finds in
// 'helper' row 5 is reported as "helper/model.safetensors: tensor "wte.weight" row 5 column 2 is
// NaN or infinite", without screening the matrices again after the fact.
#pragma once

#include <clp/error.hpp>

#include <map>
#include <string>
#include <utility>
#include "library_names.hpp"

namespace clp_transfer {

/// Throws a clp::error of `kind` (the class of that kind) with `facts` and `problem`.
[[noreturn]] inline void throw_error(clp::error_kind kind, clp::error_facts facts, std::string problem) {
  switch (kind) {
    case clp::error_kind::invalid_argument:
      throw clp::invalid_argument(std::move(facts), std::move(problem));
    case clp::error_kind::non_finite_input:
      throw clp::non_finite_input(std::move(facts), std::move(problem));
    case clp::error_kind::unsupported_layout:
      break;
  }
  throw clp::unsupported_layout(std::move(facts), std::move(problem));
}

/// The facts of an option at fault: "--k".
inline clp::error_facts option_facts(std::string option) {
  clp::error_facts facts;
  facts.argument = std::move(option);
  return facts;
}

/// Where the arguments of a library call came from, by the names the library's errors give
/// them, and where the call as a whole stands for an error that names none of them.
class error_origins {
 public:
  /// An argument the library calls `name` came from `where` (a file and tensor, a file, or an
  /// option as error_facts::argument).
  error_origins& add(std::string name, clp::error_facts where) {
    origins_[std::move(name)] = std::move(where);
    return *this;
  }
  /// What an error that names no argument and no file is about: "A and B", say, as the context.
  error_origins& otherwise(std::string context) {
    otherwise_ = std::move(context);
    return *this;
  }

  /// Throws `e` in the program's words: its argument replaced by where it came from (row and
  /// column kept), or, when it names no argument and no file, the call's context; as it is
  /// otherwise.
  [[noreturn]] void rethrow(const clp::error& e) const {
    clp::error_facts facts = e.facts();
    const auto origin = origins_.find(facts.argument);
    if (origin != origins_.end()) {
      const clp::error_facts& where = origin->second;
      facts.context.clear();
      facts.file = where.file;
      facts.tensor = where.tensor;
      facts.argument = where.argument;
    } else if (facts.file.empty() && facts.argument.empty() && !otherwise_.empty()) {
      facts.context = otherwise_;
    }
    throw_error(e.kind(), std::move(facts), e.problem());
  }

  /// Runs `call` (a library call), rethrowing its clp::errors in the program's words.
  template <class Call>
  decltype(auto) run(Call&& call) const {
    try {
      return call();
    } catch (const clp::error& e) {
      rethrow(e);
    }
  }

 private:
  std::map<std::string, clp::error_facts> origins_;
  std::string otherwise_;
};

}  // namespace clp_transfer
