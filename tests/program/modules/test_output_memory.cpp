// io/embedding_matrix.hpp's page_buffer: the memory of an output matrix, and move_pages, which
// transfer/weights_output.hpp uses to move the pages of rows already written to disk to rows
// not yet made. The oracle is the bytes written before the move.
#include "io/embedding_matrix.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <doctest/doctest.h>

using clp_transfer::page_buffer;

namespace {

constexpr std::size_t huge_page = page_buffer::huge_page;

/// Fills huge page p of `buffer` with bytes that name it.
void fill_page(const page_buffer& buffer, std::size_t p) {
  auto* const bytes = static_cast<unsigned char*>(buffer.data()) + p * huge_page;
  for (std::size_t i = 0; i < huge_page; ++i) bytes[i] = static_cast<unsigned char>((p * 131 + i * 7) & 0xff);
}

/// Whether huge page `at` of `buffer` holds what fill_page wrote into page `p`.
bool holds_page(const page_buffer& buffer, std::size_t at, std::size_t p) {
  const auto* const bytes = static_cast<const unsigned char*>(buffer.data()) + at * huge_page;
  for (std::size_t i = 0; i < huge_page; ++i)
    if (bytes[i] != static_cast<unsigned char>((p * 131 + i * 7) & 0xff)) return false;
  return true;
}

}  // namespace

TEST_CASE("page_buffer: from 2 MiB on, whole huge pages, aligned to one") {
  const page_buffer buffer(5 * huge_page + 1);
  CHECK(buffer.size() == 6 * huge_page);
  CHECK(reinterpret_cast<std::uintptr_t>(buffer.data()) % huge_page == 0);
  std::memset(buffer.data(), 0x5a, buffer.size());  // every byte is there to be written
  const page_buffer small(1000);
  CHECK(small.size() == 1024);
  CHECK(reinterpret_cast<std::uintptr_t>(small.data()) % 64 == 0);
}

#ifdef __linux__
TEST_CASE("page_buffer::move_pages moves the bytes, not copies of them, and leaves the rest alone") {
  page_buffer buffer(8 * huge_page);
  for (std::size_t p = 0; p < 8; ++p) fill_page(buffer, p);
  // Pages 0-1 to 5-6, then page 2 to 7, as the writer moves each stretch above the last.
  REQUIRE(buffer.move_pages(0, 2 * huge_page, 5 * huge_page) == 2 * huge_page);
  REQUIRE(buffer.move_pages(2 * huge_page, huge_page, 7 * huge_page) == huge_page);
  CHECK(holds_page(buffer, 5, 0));
  CHECK(holds_page(buffer, 6, 1));
  CHECK(holds_page(buffer, 7, 2));
  CHECK(holds_page(buffer, 3, 3));
  CHECK(holds_page(buffer, 4, 4));
  // The pages moved from are still the buffer's, and read as zero.
  const auto* const bytes = static_cast<const unsigned char*>(buffer.data());
  std::size_t nonzero = 0;
  for (std::size_t i = 0; i < 3 * huge_page; ++i) nonzero += bytes[i] != 0;
  CHECK(nonzero == 0);
  // A moved page is written like any other, and pages moved before move again.
  fill_page(buffer, 6);
  REQUIRE(buffer.move_pages(5 * huge_page, 2 * huge_page, 0) == 2 * huge_page);
  CHECK(holds_page(buffer, 0, 0));
  CHECK(holds_page(buffer, 1, 6));
}
#endif
