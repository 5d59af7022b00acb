// SPDX-License-Identifier: MIT
#pragma once

/// @file
/// The library's compiled part, for a program built with CLP_SEPARATE_COMPILATION: include
/// this header in exactly one source file of the program, compiled with the same macro and the
/// same Eigen settings (EIGEN_USE_BLAS, OpenMP) as the rest. It defines the functions the
/// headers then only declare, and instantiates every shipped policy's synthesis and evaluation
/// and those of a clp::weighting. A policy of the caller's own is instantiated where it is used,
/// from the headers, as in a header-only build. CMake's clp::compiled is this file, compiled.

#ifndef CLP_SEPARATE_COMPILATION
#error "<clp/impl/src.hpp> is the compiled part of a CLP_SEPARATE_COMPILATION build: define the macro for every file"
#endif

#include <clp/clp.hpp>

#include <clp/detail/diagnostics/undertrained.hpp>
#include <clp/detail/neighbours/neighbour_search-inl.hpp>
#include <clp/detail/synthesis/combination-inl.hpp>
#include <clp/detail/synthesis/entry_points-inl.hpp>
#include <clp/detail/synthesis/linear_map-inl.hpp>
#include <clp/detail/synthesis/overlap_panels-inl.hpp>
#include <clp/detail/synthesis/pursuit-inl.hpp>
#include <clp/detail/synthesis/similarity_product-inl.hpp>

namespace clp::detail {

#define CLP_DETAIL_DEFINE(Policy) CLP_DETAIL_SYNTHESIS_INSTANCE(, Policy) CLP_DETAIL_EVALUATION_INSTANCE(, Policy)
CLP_DETAIL_FOR_EACH_SHIPPED_POLICY(CLP_DETAIL_DEFINE)
CLP_DETAIL_EVALUATION_INSTANCE(, weighting)
#undef CLP_DETAIL_DEFINE

}  // namespace clp::detail
