// SPDX-License-Identifier: MIT
#pragma once

// Internal, weighting: whether a type has the shape of a weighting policy, input by input (the
// list at the top of <clp/policy.hpp>), behind clp::is_weighting_policy. Included by
// <clp/policy.hpp> after weighting_input, cosine_statistics and dense_weights, which it reads.
#include <clp/detail/internal_header_check.hpp>

#include <clp/element_type.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace clp::detail {

/// P's declared input, when P declares `static constexpr weighting_input input`.
template <class P, class = void>
struct declares_input : std::false_type {};
template <class P>
struct declares_input<P, std::enable_if_t<std::is_same_v<decltype(P::input), const weighting_input>>> : std::true_type {
};

template <class P, class = void>
struct weighs_rows : std::false_type {};
template <class P>
struct weighs_rows<
    P,
    std::enable_if_t<std::is_convertible_v<decltype(std::declval<const P&>()(std::declval<float*>(), Index{},
                                                                             std::declval<const cosine_statistics&>())),
                                           dense_weights>>> : std::true_type {};

template <class P, class = void>
struct counts_neighbours : std::false_type {};
template <class P>
struct counts_neighbours<
    P, std::enable_if_t<std::is_convertible_v<decltype(std::declval<const P&>().max_neighbours(Index{})), Index>>>
    : std::true_type {};

template <class P, class = void>
struct picks_neighbours : std::false_type {};
template <class P>
struct picks_neighbours<P, std::enable_if_t<std::is_convertible_v<decltype(std::declval<const P&>()(
                                                                      std::declval<const float*>(), Index{},
                                                                      std::declval<Index*>(), std::declval<float*>())),
                                                                  Index>>> : std::true_type {};

template <class P, class = void>
struct sets_pursuit : std::false_type {};
template <class P>
struct sets_pursuit<
    P, std::enable_if_t<std::is_convertible_v<decltype(std::declval<const P&>().tolerance), double> &&
                        std::is_convertible_v<decltype(std::declval<const P&>().max_gram_bytes), std::size_t>>>
    : std::true_type {};

template <class P, class = void>
struct sets_lambda : std::false_type {};
template <class P>
struct sets_lambda<P, std::enable_if_t<std::is_convertible_v<decltype(std::declval<const P&>().lambda), double>>>
    : std::true_type {};

/// Whether P has the call shape of the input `kind` (the list at the top of this header).
template <class P, weighting_input kind>
constexpr bool takes_input() {
  if constexpr (kind == weighting_input::cosine_row || kind == weighting_input::scaled_cosines)
    return weighs_rows<P>::value;
  else if constexpr (kind == weighting_input::nearest_cosines)
    return counts_neighbours<P>::value && picks_neighbours<P>::value;
  else if constexpr (kind == weighting_input::linear_map)
    return sets_lambda<P>::value;
  else
    return counts_neighbours<P>::value && sets_pursuit<P>::value;
}

template <class P>
constexpr bool has_policy_shape() {
  if constexpr (!declares_input<P>::value)
    return false;
  else
    return takes_input<P, P::input>();
}

}  // namespace clp::detail
