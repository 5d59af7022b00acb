// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// The errors of the library and of the programs built on it: one small hierarchy under
/// clp::error, in the manner of nlohmann::json's exceptions. Each error says what kind it is
/// (error::kind(), and a class per kind to catch), carries the facts a program acts on as
/// fields (error::facts(): the function, file, tensor, argument, row and column at fault), and
/// has a one-line message for people, built from those fields in one place (error::message).
///
///     try { clp::synthesize_rows(source, helper, overlap, output); }
///     catch (const clp::non_finite_input& e) { /* e.facts().argument, .row, .column */ }
///     catch (const clp::error& e) { std::fprintf(stderr, "%s\n", e.what()); }
///
/// Internal invariants (never caused by a caller) are not errors: they go through CLP_ASSERT,
/// which an includer may define first, for example to route it into their own handler.

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#ifndef CLP_ASSERT
#include <cassert>
#define CLP_ASSERT(condition) assert(condition)
#endif

namespace clp {

/// What went wrong, broadly: the kind of an error, one class per kind below.
enum class error_kind {
  invalid_argument,    ///< sizes that do not fit, an id past a matrix, an unknown name, a bad option
  non_finite_input,    ///< a NaN or infinity in an input matrix
  unsupported_layout,  ///< memory that cannot be viewed as a strided matrix without a copy
};

/// "invalid argument", "non-finite input", "unsupported layout".
constexpr std::string_view error_kind_name(error_kind kind) {
  switch (kind) {
    case error_kind::invalid_argument:
      return "invalid argument";
    case error_kind::non_finite_input:
      return "non-finite input";
    case error_kind::unsupported_layout:
      break;
  }
  return "unsupported layout";
}

/// Where an error is: every field is optional (empty, or -1 for a position). Set the fields by
/// name, so that a call site says what it sets and a new field changes none of them:
///     error_facts::in("clp::synthesize_rows").with_argument("helper").at(5, 2)
///     error_facts{}.with_file(path).with_tensor("wte.weight").at_row(7)
struct error_facts {
  std::string context;   ///< the function or command that refused: "clp::synthesize_rows"
  std::string file;      ///< the file at fault
  std::string tensor;    ///< the tensor at fault, inside `file`
  std::string argument;  ///< the argument, matrix or option at fault: "helper", "--k"
  std::ptrdiff_t row = -1, column = -1;

  /// The facts of an error raised by `context`, the function or command that refused.
  static error_facts in(std::string context) {
    error_facts facts;
    facts.context = std::move(context);
    return facts;
  }
  error_facts with_file(std::string value) && { return set(&error_facts::file, std::move(value)); }
  error_facts with_tensor(std::string value) && { return set(&error_facts::tensor, std::move(value)); }
  error_facts with_argument(std::string value) && { return set(&error_facts::argument, std::move(value)); }
  error_facts at_row(std::ptrdiff_t value) && { return set(&error_facts::row, value); }
  error_facts at(std::ptrdiff_t row_value, std::ptrdiff_t column_value) && {
    row = row_value;
    column = column_value;
    return std::move(*this);
  }

 private:
  template <class Field, class Value>
  error_facts set(Field error_facts::*field, Value value) {
    this->*field = std::move(value);
    return std::move(*this);
  }
};

/// The base of every error a caller of clp can cause. what() is error::message(facts, problem).
class error : public std::runtime_error {
 public:
  error(error_kind kind, error_facts facts, std::string problem)
      : std::runtime_error(message(facts, problem)),
        kind_(kind),
        facts_(std::move(facts)),
        problem_(std::move(problem)) {}

  error_kind kind() const noexcept { return kind_; }
  const error_facts& facts() const noexcept { return facts_; }
  /// What is wrong, without where: "is NaN or infinite", "has 5 rows but 'helper' has 6".
  const std::string& problem() const noexcept { return problem_; }

  /// The one-line message: "<file or context>: <subject> <problem>", where the subject names
  /// the tensor, the argument and the row and column, those that are given:
  ///     clp::synthesize_rows: 'helper' row 5 column 2 is NaN or infinite
  ///     model/model.safetensors: tensor "wte.weight" row 7 column 0 is NaN or infinite
  ///     --k must be at least 1, not 0
  /// Line breaks in the problem become spaces; a file name holding one is written quoted.
  static std::string message(const error_facts& facts, std::string problem) {
    std::replace_if(
        problem.begin(), problem.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
    std::string where = facts.file.empty() ? facts.context : quoted_if_broken(facts.file);
    std::string subject;
    const auto add = [&subject](const std::string& part) { subject += (subject.empty() ? "" : " ") + part; };
    if (!facts.tensor.empty()) add("tensor " + quoted(facts.tensor));
    if (!facts.argument.empty()) add(facts.argument.rfind("-", 0) == 0 ? facts.argument : "'" + facts.argument + "'");
    if (facts.row >= 0) add("row " + std::to_string(facts.row));
    if (facts.column >= 0) add("column " + std::to_string(facts.column));
    std::string text = subject.empty() ? std::move(problem) : subject + " " + problem;
    return where.empty() ? text : where + ": " + text;
  }

  /// `text` as a JSON string literal: quoted, with '"', '\\' and control characters escaped,
  /// so that a name holding spaces or line breaks stays unambiguous in a one-line message.
  static std::string quoted(std::string_view text) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out = "\"";
    for (const char c : text) {
      const auto byte = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c == '\t') {
        out += "\\t";
      } else if (byte < 0x20) {
        out += "\\u00";
        out += hex[byte >> 4];
        out += hex[byte & 15];
      } else {
        out += c;
      }
    }
    return out + "\"";
  }

 private:
  static std::string quoted_if_broken(const std::string& file) {
    return file.find_first_of("\n\r") == std::string::npos ? file : quoted(file);
  }

  error_kind kind_;
  error_facts facts_;
  std::string problem_;
};

/// Sizes that do not fit, an id past a matrix, ids out of order, an unknown name, a value out
/// of range: the call cannot mean anything as given.
class invalid_argument : public error {
 public:
  invalid_argument(error_facts facts, std::string problem)
      : error(error_kind::invalid_argument, std::move(facts), std::move(problem)) {}
};

/// A NaN or infinite element (as float32: a double past float's range counts) in an input;
/// facts().row and column say where, facts().argument (or file and tensor) in which matrix.
class non_finite_input : public error {
 public:
  non_finite_input(error_facts facts, std::string problem = "is NaN or infinite")
      : error(error_kind::non_finite_input, std::move(facts), std::move(problem)) {}
};

/// Memory the library cannot view as a strided 2-D matrix without copying it: an inner
/// stride other than one, a tensor that is not 2-D, memory on another device. Copy it
/// yourself (a copy you can see) or hand the library another view.
class unsupported_layout : public error {
 public:
  unsupported_layout(error_facts facts, std::string problem)
      : error(error_kind::unsupported_layout, std::move(facts), std::move(problem)) {}
};

}  // namespace clp
