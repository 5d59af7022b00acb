// Phase 2 of `clp-transfer transfer`: which target tokens the source already has (eq. 2's
// overlap), and which rows are left to synthesise.
#pragma once

#include <clp/error.hpp>
#include <clp/vocabulary.hpp>

#include <stdexcept>
#include <utility>

#include "transfer/read_models.hpp"

namespace clp::program {

/// The overlap of the source's and the helper's vocabulary, as clp::intersect_vocabularies
/// found it by --match, with special tokens by role (read_models started it; see
/// token_matching.hpp); its errors name both vocabulary files.
inline token_matching match_vocabularies(loaded_models& models) {
  try {
    // read_models checked that both embeddings are 2-D, so the intersection was started.
    return models.intersection.get();
  } catch (const io::error&) {
    throw;  // a vocabulary's own error, or a special token's: names its file already
  } catch (const clp::error& e) {
    throw io::error(detail::vocabulary_file(models.source.folder.directory()).string() + " and " +
                    detail::vocabulary_file(models.helper.folder.directory()).string() + ": " + e.what());
  }
}

}  // namespace clp::program
