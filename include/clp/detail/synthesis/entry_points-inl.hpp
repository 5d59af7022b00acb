// SPDX-License-Identifier: MIT
#pragma once

// Internal, synthesis: the bodies of entry_points.hpp that take no template argument from the
// caller. Included by entry_points.hpp in header-only builds, and by <clp/impl/src.hpp> with
// CLP_SEPARATE_COMPILATION.
#include <clp/detail/internal_header_check.hpp>

#include <clp/detail/synthesis/entry_points.hpp>

#include <string>
#include <vector>

namespace clp::detail {

CLP_DECL std::vector<synthesis_report> synthesize_jobs(const matrix_view<const void>& helper,
                                                       const vocabulary_overlap& overlap,
                                                       const std::vector<synthesis_job>& jobs,
                                                       const synthesis_options& options) {
  constexpr const char* context = "clp::synthesize_each";
  if (jobs.empty()) throw invalid_argument(error_facts::in(context).with_argument("jobs"), "is empty");
  std::vector<pass_job<weighting>> pass;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const std::string name = "jobs[" + std::to_string(j) + "] ";
    pass.push_back({jobs[j].policy(),
                    {{jobs[j].source(), jobs[j].output(), name + "source", name + "output", jobs[j].report_only()}}});
    validate_shapes(pass.back().pairs, helper, overlap, context);
  }
  const rows_to_write rows = select_rows(overlap, options.first_row, options.last_row, helper.rows(), context);
  const int threads = resolve_threads(options.threads);
  for (std::size_t j = 0; j < pass.size(); ++j) {
    bool screened = false;  // a source screened for an earlier job needs no second screen
    for (std::size_t i = 0; i < j && !screened; ++i) screened = same_sources(pass[i].pairs, pass[j].pairs);
    if (!screened) screen_inputs(pass[j].pairs, helper, overlap, rows.missing, threads, context);
  }
  return run_pass(pass, helper, overlap, rows, threads, options, false, context);
}

}  // namespace clp::detail
