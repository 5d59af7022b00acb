// The doctest runner for the clp-transfer program tests; the cases live in the test_*.cpp files.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
