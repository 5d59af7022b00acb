// The library's basic vocabulary, named in the program's own namespace: the program is a client
// of the library like any other, in clp_transfer (and clp_transfer::io for its files), and names
// these four as the library does. Every other library name it uses is written clp::name.
#pragma once

#include <clp/element_type.hpp>
#include <clp/matrix_view.hpp>
#include <clp/token_bytes.hpp>
#include <clp/vocabulary_overlap.hpp>

namespace clp_transfer {
using clp::Index;
using clp::matrix_view;
using clp::token_spelling;
using clp::vocabulary_overlap;
}  // namespace clp_transfer
