// The output checked as `clp-transfer verify` checks any folder, while it is still staged: a
// transfer carries over the source's own defects (a special id past the rows, an all-zero row
// kept by --undertrained keep), and the user hears of them now, not at training or conversion.
#pragma once

#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "errors.hpp"
#include "verify/finding.hpp"
#include "verify/verify_folder.hpp"

namespace clp_transfer {

/// verify's findings on the output staged at `staged`, each naming its file as it will be named
/// once the output is committed to `folder`. A check that cannot run at all is one finding of
/// kind unreadable: the output is complete either way, and the transfer does not fail over it.
/// @param[in] staged  the staged output folder, complete
/// @param[in] folder  the output folder the user named
/// @param[in] names   the embedding and head names the source's tensors were found under
/// @param[in] threads  workers (0: every hardware thread)
/// @param[in] scanned  the values of the tensors the program wrote, scanned as they were written
///                     (weights_output::value_scans): the check does not read them back
inline std::vector<verify::finding> check_output(const std::filesystem::path& staged,
                                                 const std::filesystem::path& folder, verify::tensor_choice names,
                                                 int threads, const verify::value_scans& scanned) {
  std::vector<verify::finding> findings;
  try {
    findings = verify::verify_folder(staged, std::move(names), threads, scanned);
  } catch (const std::exception& e) {
    findings.push_back({verify::finding_kind::unreadable, staged, "could not be checked: " + error_line(e)});
  }
  for (verify::finding& f : findings) {
    const std::filesystem::path inside = f.file.lexically_relative(staged);
    f.file = inside.empty() || inside == "." ? folder : folder / inside;
  }
  return findings;
}

/// The summary's line when the check found nothing, or one warning a finding.
inline void print_output_check(const std::vector<verify::finding>& findings) {
  if (findings.empty())
    std::fprintf(stderr, "  output checked     as `clp-transfer verify` checks a folder: no findings\n");
  for (const verify::finding& f : findings)
    std::fprintf(stderr, "clp-transfer: warning: verify: %s\n", f.line().c_str());
}

}  // namespace clp_transfer
