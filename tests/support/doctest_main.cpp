// The doctest runner of the suites built with clp_add_test_target; their cases live in their
// test_*.cpp files.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
