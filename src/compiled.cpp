// SPDX-License-Identifier: MIT
// clp::compiled: the library's compiled part (<clp/impl/src.hpp>), built once by CMake for
// programs that define CLP_SEPARATE_COMPILATION (the target makes it a public definition).
#include <clp/impl/src.hpp>
