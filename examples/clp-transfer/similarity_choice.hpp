// Which similarity product `clp-transfer transfer` gives the neighbour lists (top-k, softmax,
// least-squares' row norms from top-k): the library's float32 product, or, where the program was
// built with oneDNN and the CPU has bf16 arithmetic (avx512_bf16 or AMX, checked at run time), a
// bf16 product whose candidates the library rescores in float32 (<clp/similarity_product.hpp>).
// The dense weightings always run float32.
#pragma once

#include <clp/error.hpp>
#include <clp/similarity_product.hpp>

#include <memory>
#include <string>

#include "errors.hpp"
#include "library_names.hpp"

#ifdef CLP_HAVE_ONEDNN
#include "onednn/bf16_product.hpp"
#endif

namespace clp_transfer {

/// --similarity-product: auto (bf16 where it runs, else float32), float32, or bf16 (refused
/// where it cannot run).
enum class similarity_choice { automatic, float32, bf16 };

/// The choice named on the command line; throws naming the option for any other name.
inline similarity_choice parse_similarity_choice(const std::string& name) {
  if (name == "auto") return similarity_choice::automatic;
  if (name == "float32") return similarity_choice::float32;
  if (name == "bf16") return similarity_choice::bf16;
  throw clp::invalid_argument(option_facts("--similarity-product"),
                              "must be auto, float32 or bf16, not '" + name + "'");
}

/// Why this build on this CPU cannot run the bf16 product; empty when it can.
inline std::string bf16_unavailable_reason() {
#ifdef CLP_HAVE_ONEDNN
  return onednn_bf16_unavailable_reason();
#else
  return "this clp-transfer was built without oneDNN (install Debian's libdnnl-dev and build it again)";
#endif
}

/// The product for `choice`: null for the library's float32 product.
inline std::shared_ptr<const clp::similarity_product> make_similarity_product(similarity_choice choice) {
  if (choice == similarity_choice::float32) return nullptr;
  const std::string why_not = bf16_unavailable_reason();
  if (!why_not.empty()) {
    if (choice == similarity_choice::bf16)
      throw clp::invalid_argument(
          option_facts("--similarity-product"),
          "bf16 cannot run: " + why_not + "; use auto (bf16 where it runs, else float32) or float32");
    return nullptr;
  }
#ifdef CLP_HAVE_ONEDNN
  return std::make_shared<onednn_bf16_product>();
#else
  return nullptr;
#endif
}

}  // namespace clp_transfer
