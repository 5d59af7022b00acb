// Skipped is not passed: a test case that cannot run here (a fetched tokenizer is absent) calls
// clp_test::skip(reason) and returns. When the case then ends without a failure, a marker line
// goes to stdout, and CTest, told by clp_add_test_target (cmake/ClpProjectOptions.cmake) to look
// for it (SKIP_REGULAR_EXPRESSION), reports the case as skipped. A case that failed before it
// skipped prints no marker, and fails: the marker never hides a failure.
#pragma once

#include <cstdio>
#include <string>

#include <doctest/doctest.h>

/// The line CTest looks for; keep it equal to CLP_TEST_SKIP_MARKER in cmake/ClpProjectOptions.cmake.
#define CLP_TEST_SKIP_MARKER "CLP-TEST-SKIPPED"

namespace clp_test {

namespace detail {

/// Why the running case skipped; empty while it did not.
inline std::string& skip_reason() {
  static std::string reason;
  return reason;
}

/// A doctest listener: prints the marker at the end of a case that skipped and did not fail.
class skip_listener : public doctest::IReporter {
 public:
  explicit skip_listener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override { skip_reason().clear(); }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& stats) override {
    if (!skip_reason().empty() && stats.testCaseSuccess) {
      std::printf("%s: %s\n", CLP_TEST_SKIP_MARKER, skip_reason().c_str());
      std::fflush(stdout);
    }
    skip_reason().clear();
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace detail

/// Marks the running case skipped, for `reason`; the case should return at once.
inline void skip(const std::string& reason) {
  if (detail::skip_reason().empty()) detail::skip_reason() = reason;
}

}  // namespace clp_test

DOCTEST_REGISTER_LISTENER("clp_test_skip", 1, clp_test::detail::skip_listener);
