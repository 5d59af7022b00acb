// SPDX-License-Identifier: MIT
#pragma once

// Internal, weighting: the one way every entry point takes a policy. Included by
// <clp/weights.hpp> after clp::weighting, which it reads.
#include <clp/detail/internal_header_check.hpp>

#include <clp/policy.hpp>

#include <type_traits>
#include <utility>
#include <variant>

namespace clp::detail {

/// The one way every entry point takes a policy: f(policy) for a policy type, f(the policy it
/// holds) for a `weighting`. A type that is neither stops the build with the message below.
template <class Policy, class F>
decltype(auto) visit_weighting(const Policy& policy, F&& f) {
  if constexpr (std::is_same_v<Policy, weighting>) {
    return std::visit(std::forward<F>(f), policy);
  } else {
    static_assert(is_weighting_policy_v<Policy>,
                  "clp: not a weighting policy. A policy declares 'static constexpr clp::weighting_input input' "
                  "and has the call that goes with it (see <clp/policy.hpp>), or is a clp::weighting");
    return std::forward<F>(f)(policy);
  }
}

/// X(policy) for each alternative of clp::weighting, in its order: the policies whose
/// instantiations <clp/impl/src.hpp> compiles once (CLP_SEPARATE_COMPILATION).
// clang-format off
#define CLP_DETAIL_FOR_EACH_SHIPPED_POLICY(X)                                                    \
  X(paper_weights) X(clamped_weights) X(top_k_weights) X(softmax_weights) X(sparsemax_weights) \
  X(guarded_paper_weights) X(omp_weights) X(least_squares_map)
// clang-format on
#define CLP_DETAIL_LISTED(Policy) , Policy
template <class Void, class... Policies>
struct shipped_policies {
  using variant = std::variant<Policies...>;
};
static_assert(
    std::is_same_v<weighting, shipped_policies<void CLP_DETAIL_FOR_EACH_SHIPPED_POLICY(CLP_DETAIL_LISTED)>::variant>,
    "clp: CLP_DETAIL_FOR_EACH_SHIPPED_POLICY lists clp::weighting's alternatives");
#undef CLP_DETAIL_LISTED

}  // namespace clp::detail
