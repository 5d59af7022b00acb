// SPDX-License-Identifier: MIT
// clp/token_bytes.hpp: the bytes a token stands for in each spelling, checked against the
// spellings' definitions rebuilt here in another way (GPT-2's alphabet from its two lists, a
// writer for each spelling), malformed pieces, and random bytes in every spelling.

#include <clp/token_bytes.hpp>

#include "support/utf8.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

using clp_test::utf8;

/// GPT-2's byte -> character table as its encoder writes it: the kept bytes in three ranges,
/// then every byte missing from them, in order, gets 256 + a counter.
std::vector<std::uint32_t> gpt2_byte_to_char() {
  std::vector<int> kept;
  for (int b = '!'; b <= '~'; ++b) kept.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b) kept.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b) kept.push_back(b);
  std::vector<std::uint32_t> table(256, 0);
  std::vector<bool> is_kept(256, false);
  for (int b : kept) {
    table[std::size_t(b)] = std::uint32_t(b);
    is_kept[std::size_t(b)] = true;
  }
  std::uint32_t n = 0;
  for (int b = 0; b < 256; ++b)
    if (!is_kept[std::size_t(b)]) table[std::size_t(b)] = 256 + n++;
  return table;
}

std::string spell_byte_level(std::string_view bytes) {
  static const auto table = gpt2_byte_to_char();
  std::string out;
  for (char c : bytes) out += utf8(table[static_cast<unsigned char>(c)]);
  return out;
}

std::string bytes_of(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out += char(v);
  return out;
}

using clp::token_bytes;
using clp::token_spelling;

const std::string ws = "\xE2\x96\x81";  // '▁'

}  // namespace

TEST_CASE("token_bytes: GPT-2's byte-level alphabet, every byte, against its definition") {
  const auto table = gpt2_byte_to_char();
  for (int b = 0; b < 256; ++b) {
    const std::string ch = utf8(table[std::size_t(b)]);
    INFO("byte " << b);
    CHECK(token_bytes(ch, token_spelling::byte_level) == std::string(1, char(b)));
  }
  // The well-known ones.
  CHECK(token_bytes("\xC4\xA0", token_spelling::byte_level) == " ");     // Ġ
  CHECK(token_bytes("\xC4\x8A", token_spelling::byte_level) == "\n");    // Ċ
  CHECK(token_bytes("\xC4\x89", token_spelling::byte_level) == "\t");    // ĉ
  CHECK(token_bytes("\xC5\x82", token_spelling::byte_level) == "\xA0");  // ł: no-break space
  CHECK(token_bytes("\xC5\x83", token_spelling::byte_level) == "\xAD");  // Ń: soft hyphen, the last
  CHECK(token_bytes("\xC4\xA0the", token_spelling::byte_level) == " the");
  // GPT-2's "âĢĻ" is the three bytes of U+2019, the right single quotation mark.
  CHECK(token_bytes("\xC3\xA2\xC4\xA2\xC4\xBB", token_spelling::byte_level) == "\xE2\x80\x99");
  // A part of a character is a token too: "Ã" alone is the lead byte 0xC3.
  CHECK(token_bytes("\xC3\x83", token_spelling::byte_level) == bytes_of({0xC3}));
}

TEST_CASE("token_bytes: byte-level round trip of random byte strings") {
  std::mt19937 engine(7);
  std::uniform_int_distribution<int> byte(0, 255), length(1, 12);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes;
    for (int n = length(engine); n > 0; --n) bytes += char(byte(engine));
    REQUIRE(token_bytes(spell_byte_level(bytes), token_spelling::byte_level) == bytes);
  }
}

TEST_CASE("token_bytes: a byte-level token outside the alphabet is its plain string") {
  const std::vector<std::string> malformed{
      ws + "x",     // '▁' is not in the alphabet
      "a b",        // a raw space is not either (it is written Ġ)
      "tab\there",  // nor a raw control character
      "\xC3",       // a lead byte without its continuation
      "x\xC4",      // ... at the end
      "\xC0\xA0",   // an overlong encoding
      "\xC5\x84",   // U+0144, one past the alphabet
      "\xEF\xBD\x9C"
      "end\xEF\xBD\x9C",   // DeepSeek's "｜end｜"-style special token
      "\x80",              // a stray continuation byte
      "\xF0\x9F\x98\x80",  // an emoji (four bytes)
  };
  for (const std::string& token : malformed) {
    INFO(token);
    CHECK(token_bytes(token, token_spelling::byte_level) == token);
  }
  // A malformed character anywhere leaves the whole token plain, not a prefix decoded.
  CHECK(token_bytes("\xC4\xA0"
                    "a b",
                    token_spelling::byte_level) ==
        "\xC4\xA0"
        "a b");
  CHECK(token_bytes("", token_spelling::byte_level).empty());
  CHECK(token_bytes("<|endoftext|>", token_spelling::byte_level) == "<|endoftext|>");
}

TEST_CASE("token_bytes: SentencePiece word marks and byte fallback") {
  CHECK(token_bytes(ws + "house", token_spelling::sentencepiece) == " house");
  CHECK(token_bytes(ws, token_spelling::sentencepiece) == " ");
  CHECK(token_bytes(ws + ws, token_spelling::sentencepiece) == "  ");
  CHECK(token_bytes("a" + ws + "b" + ws, token_spelling::sentencepiece) == "a b ");
  CHECK(token_bytes("<0x0A>", token_spelling::sentencepiece) == "\n");
  CHECK(token_bytes("<0xA1>", token_spelling::sentencepiece) == bytes_of({0xA1}));
  CHECK(token_bytes("<0xff>", token_spelling::sentencepiece) == bytes_of({0xFF}));
  CHECK(token_bytes("<0x00>", token_spelling::sentencepiece) == std::string(1, '\0'));
  for (int b = 0; b < 256; ++b) {
    const char hex[] = "0123456789ABCDEF";
    const std::string piece = std::string("<0x") + hex[b / 16] + hex[b % 16] + ">";
    CHECK(token_bytes(piece, token_spelling::sentencepiece) == std::string(1, char(b)));
  }
  // Not byte pieces: the plain string (with '▁' still a space).
  for (const std::string token : {"<0xZZ>", "<0x4>", "<0x0A>x", "<0x0A", "<0X0A>", "<0x-1>", "<0x>"})
    CHECK(token_bytes(token, token_spelling::sentencepiece) == token);
  CHECK(token_bytes("<0x" + ws + ">", token_spelling::sentencepiece) == "<0x >");
  // SentencePiece reads characters as themselves: "¡" is U+00A1, two bytes.
  CHECK(token_bytes("\xC2\xA1", token_spelling::sentencepiece) == "\xC2\xA1");
  CHECK(token_bytes("\xE2\x96", token_spelling::sentencepiece) == "\xE2\x96");  // half a '▁'
}

TEST_CASE("token_bytes: WordPiece continuations and word-initial pieces") {
  CHECK(token_bytes("##ing", token_spelling::wordpiece) == "ing");
  CHECK(token_bytes("house", token_spelling::wordpiece) == " house");
  CHECK(token_bytes("###", token_spelling::wordpiece) == "#");
  CHECK(token_bytes("[CLS]", token_spelling::wordpiece) == " [CLS]");
  CHECK(token_bytes("##", token_spelling::wordpiece) == "##");  // a lone ## continues nothing
  CHECK(token_bytes("#", token_spelling::wordpiece) == " #");
  CHECK(token_bytes("", token_spelling::wordpiece).empty());
}

TEST_CASE("token_bytes: one word in three families' spellings is one string of bytes") {
  const std::string house = " house";
  CHECK(token_bytes(ws + "house", token_spelling::sentencepiece) == house);
  CHECK(token_bytes("\xC4\xA0house", token_spelling::byte_level) == house);
  CHECK(token_bytes("house", token_spelling::wordpiece) == house);
  CHECK(token_bytes(" house", token_spelling::plain) == house);
  // Inside a word: unmarked in SentencePiece and byte-level, ## in WordPiece.
  CHECK(token_bytes("##house", token_spelling::wordpiece) == token_bytes("house", token_spelling::sentencepiece));
  CHECK(token_bytes("house", token_spelling::byte_level) == "house");
}

TEST_CASE("token_bytes: plain is the string itself") {
  for (const std::string token : {"\xC4\xA0the", "<0x0A>", "##x", "\xE2\x96\x81x", ""})
    CHECK(token_bytes(token, token_spelling::plain) == token);
}

TEST_CASE("append_token_bytes: appends, and reuses the buffer's memory") {
  std::string out = "prefix:";
  clp::append_token_bytes("\xC4\xA0the", token_spelling::byte_level, out);
  clp::append_token_bytes("<0x0A>", token_spelling::sentencepiece, out);
  clp::append_token_bytes("a b", token_spelling::byte_level, out);  // malformed: appended as it is
  CHECK(out == "prefix: the\na b");
  out.clear();
  out.reserve(64);
  const char* const memory = out.data();
  for (const char* token : {"\xC4\xA0the",
                            "\xE2\x96\x81"
                            "cat",
                            "##s", "<0xZZ>"})
    for (auto spelling : {token_spelling::plain, token_spelling::byte_level, token_spelling::sentencepiece,
                          token_spelling::wordpiece}) {
      out.clear();
      clp::append_token_bytes(token, spelling, out);
    }
  CHECK(out.data() == memory);
}

TEST_CASE("token_bytes: random bytes in every spelling never fail") {
  std::mt19937 engine(11);
  std::uniform_int_distribution<int> byte(0, 255), length(0, 10), pick(0, 9);
  const std::vector<std::string> pieces{ws, "<0x", ">", "##", "\xC4", "\xA0", "\xC5", "0A", "Z", "\xE2"};
  for (int i = 0; i < 5000; ++i) {
    std::string token;
    for (int n = length(engine); n > 0; --n)
      token += pick(engine) < 5 ? std::string(1, char(byte(engine))) : pieces[std::size_t(pick(engine))];
    for (auto spelling : {token_spelling::plain, token_spelling::byte_level, token_spelling::sentencepiece,
                          token_spelling::wordpiece}) {
      const std::string bytes = token_bytes(token, spelling);
      // No spelling makes a token longer, except WordPiece's one leading space.
      CHECK(bytes.size() <= token.size() + (spelling == token_spelling::wordpiece ? 1u : 0u));
    }
  }
}

TEST_CASE("token_spelling names") {
  for (auto spelling :
       {token_spelling::plain, token_spelling::byte_level, token_spelling::sentencepiece, token_spelling::wordpiece})
    CHECK(clp::token_spelling_from_name(clp::token_spelling_name(spelling)) == spelling);
  CHECK(clp::token_spelling_name(token_spelling::byte_level) == "byte_level");
  std::string message;
  try {
    clp::token_spelling_from_name("bpe");
  } catch (const clp::invalid_argument& e) {
    message = e.what();
    CHECK(e.facts().context == "clp::token_spelling_from_name");
    CHECK(e.facts().argument == "name");
  }
  CHECK(message ==
        "clp::token_spelling_from_name: 'name' 'bpe' is no spelling (expected plain, byte_level, sentencepiece or "
        "wordpiece)");
}
