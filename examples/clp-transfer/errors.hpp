// The one place where the library's errors become the program's: the library names what it was
// given ('source', 'helper', "lm_head.weight source", the option 'k'); the program knows where
// each came from (a file and a tensor, a tokenizer file, an option such as --k) and says that
// instead, keeping the error's kind, row, column and problem. So a NaN the library finds in
// 'helper' row 5 is reported as "helper/model.safetensors: tensor "wte.weight" row 5 column 2 is
// NaN or infinite", without screening the matrices again after the fact. The mapping is total:
// no library context ("clp::synthesize_rows") reaches the user, and error_line turns whatever a
// command throws into the one line main prints.
#pragma once

#include <clp/error.hpp>

#include <exception>
#include <filesystem>
#include <map>
#include <new>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "io/errors.hpp"
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
  /// column kept); otherwise the call's context in place of the library function's name, so
  /// that an argument no origin names reads "a.json and b.json: 'output' has 3 rows", and
  /// without a context "'output' has 3 rows". The kind and the problem are kept.
  [[noreturn]] void rethrow(const clp::error& e) const {
    clp::error_facts facts = e.facts();
    const auto origin = origins_.find(facts.argument);
    if (origin != origins_.end()) {
      const clp::error_facts& where = origin->second;
      facts.context.clear();
      facts.file = where.file;
      facts.tensor = where.tensor;
      facts.argument = where.argument;
    } else if (facts.file.empty() || is_library_context(facts.context)) {
      facts.context = otherwise_;
    }
    throw_error(e.kind(), std::move(facts), e.problem());
  }

  /// Whether `context` is a name of the library's ("clp::synthesize_rows"), which means nothing
  /// to a user of the program.
  static bool is_library_context(const std::string& context) { return context.find("::") != std::string::npos; }

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

/// The one line the program prints for `e`, whatever threw it, after "clp-transfer: error: ":
/// a clp::error as it is, but with a library context that slipped past every error_origins left
/// out; a file-system error as "PATH: reason"; a JSON error without the library's code; memory
/// that ran out with what to try. Never a C++ name or a library's internal code.
inline std::string error_line(const std::exception& e) {
  if (const auto* library = dynamic_cast<const clp::error*>(&e)) {
    clp::error_facts facts = library->facts();
    if (!error_origins::is_library_context(facts.context)) return library->what();
    facts.context.clear();
    return clp::error::message(facts, library->problem());
  }
  if (const auto* system = dynamic_cast<const std::filesystem::filesystem_error*>(&e))
    return clp::error::message(clp::error_facts{}.with_file(system->path1().string()), system->code().message());
  if (const auto* json = dynamic_cast<const nlohmann::json::exception*>(&e)) return io::json_reason(json->what());
  if (dynamic_cast<const std::bad_alloc*>(&e))
    return "out of memory (a smaller --tile-mb or fewer --threads need less; docs/performance.md sizes a run)";
  return clp::error::message({}, e.what());
}

}  // namespace clp_transfer
