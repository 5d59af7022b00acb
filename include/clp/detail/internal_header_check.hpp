// SPDX-License-Identifier: MIT
//
// Internal: the line between the library's public headers and its internals, drawn as Eigen
// draws it. Every header under clp/detail/ and its subfolders includes this file first, and it
// refuses to compile unless a public clp header came before: a public header that uses
// internals defines CLP_PUBLIC_HEADER_INCLUDED before it includes any of them. What a caller needs from the
// internals belongs in a public header, documented; nothing here is a promise.
//
// No include guard: the check runs wherever it is included.

#ifndef CLP_PUBLIC_HEADER_INCLUDED
#error \
    "clp/detail/ headers are the library's internals: include a public header (<clp/clp.hpp>, <clp/synthesize.hpp>, <clp/knn_overlap.hpp>, ...) instead"
#endif
