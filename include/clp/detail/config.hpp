// SPDX-License-Identifier: MIT
#pragma once

// Internal: the two ways the library is built. By default every function is in the headers
// (header-only). With CLP_SEPARATE_COMPILATION defined for every file of a program, the heavy
// bodies that take no template argument from the caller (the engine's type-erased entry points,
// the diagnostics, the shipped policies' instantiations) are declared only, and one file of the
// program compiles them: the one that includes <clp/impl/src.hpp> (docs/library.md).
#include <clp/detail/internal_header_check.hpp>

// CLP_DECL marks such a function where it is declared and where it is defined: inline in the
// headers, an ordinary function of the one compiled file otherwise.
#ifdef CLP_SEPARATE_COMPILATION
#define CLP_DECL
#else
#define CLP_DECL inline
#endif
