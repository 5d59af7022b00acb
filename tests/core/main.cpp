// SPDX-License-Identifier: MIT
// The core test suite's entry point: one test file per public header, see tests/core/.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
