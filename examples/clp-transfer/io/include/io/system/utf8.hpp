// UTF-8 validity, checked where text enters the program from a binary format (a SentencePiece
// model's pieces, vocab.txt's lines, a pickle's tensor names): every token and tensor name the
// program holds is UTF-8, as those it reads from JSON are, so that any of them can be written
// into a JSON report or a safetensors header.
#pragma once

#include <cstddef>
#include <string_view>
#include "io/library_names.hpp"

namespace clp_transfer::io {

/// Whether `text` is well-formed UTF-8 (RFC 3629): no overlong forms, no surrogates
/// (U+D800-U+DFFF, which Python's "surrogatepass" writes), nothing past U+10FFFF.
/// @param[in] text  any bytes
bool valid_utf8(std::string_view text);

}  // namespace clp_transfer::io
