// The values of the per-token tensors, read a stretch of rows at a time with pread (a few MB in
// memory, whatever the tensor's size): NaN or infinite values, and rows of tokens that are all
// zero.
//
// Which zero rows are findings: a row is a token's row when a token of the tokenizer has its id.
// Rows no token has (past the highest id, or in a gap of the ids) are padding, which models
// add to round the row count up (and which `transfer` fills): left alone, as is the row of the pad
// token (config.json's pad_token_id, or the token the tokenizer's files name as pad), which an
// embedding with padding_idx keeps at zero by design. Every other all-zero token row is a
// finding: the model cannot tell those tokens apart. Without a tokenizer no row is known to be a
// token's, and zero rows are not checked.
#pragma once

#include <clp/element_type.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "io/embedding_matrix.hpp"
#include "io/errors.hpp"
#include "io/system/posix_file.hpp"
#include "verify/finding.hpp"
#include "verify/token_index.hpp"
#include "verify/token_tensors.hpp"

namespace clp_transfer::verify {

/// Bytes read at a time.
inline constexpr std::size_t stream_bytes = std::size_t(4) << 20;

/// Calls `visit(offset, bytes, size)` for consecutive stretches of `tensor`'s bytes, each a
/// whole number of `unit` bytes (at least one unit) and at most about stream_bytes.
template <class Visit>
void stream_bytes_of(const token_tensor& tensor, std::size_t unit, Visit&& visit) {
  const std::size_t stretch = std::max<std::size_t>(1, stream_bytes / std::max<std::size_t>(unit, 1)) * unit;
  std::vector<double> buffer((stretch + sizeof(double) - 1) / sizeof(double));  // aligned for any element
  const std::uint64_t total = tensor.entry->byte_size;
  for (std::uint64_t done = 0; done < total;) {
    const auto size = static_cast<std::size_t>(std::min<std::uint64_t>(stretch, total - done));
    io::read_exactly(tensor.file->path(), tensor.file->descriptor(), buffer.data(), size, tensor.entry->offset + done,
                     "tensor " + io::quoted_name(tensor.name));
    visit(done, buffer.data(), size);
    done += size;
  }
}

/// Whether two tensors have the same dtype, shape and bytes.
inline bool equal_tensors(const token_tensor& a, const token_tensor& b) {
  if (a.entry->dtype != b.entry->dtype || a.entry->shape != b.entry->shape) return false;
  std::vector<char> other;
  bool equal = true;
  stream_bytes_of(a, 1, [&](std::uint64_t offset, const void* bytes, std::size_t size) {
    if (!equal) return;
    other.resize(size);
    io::read_exactly(b.file->path(), b.file->descriptor(), other.data(), size, b.entry->offset + offset,
                     "tensor " + io::quoted_name(b.name));
    equal = std::equal(other.begin(), other.end(), static_cast<const char*>(bytes));
  });
  return equal;
}

/// What scan_values found in one tensor.
struct value_scan {
  std::int64_t non_finite = 0;                     ///< NaN and infinite values
  std::int64_t first_row = -1, first_column = -1;  ///< the first of them
  std::vector<std::int64_t> zero_rows;             ///< token rows that are all zero (is_token_row)
};

/// Scans every value of `tensor`, a floating-point per-token tensor, a stretch of rows at a time.
/// @param[in] tensor        F32, F64, F16 or BF16; #rows by #columns values in row-major order
/// @param[in] is_token_row  whether an all-zero row `r` is a finding: empty for no zero-row check
inline value_scan scan_values(const token_tensor& tensor, const std::vector<bool>& is_token_row) {
  value_scan scan;
  const clp::element_type type = *element_type_of(tensor.entry->dtype);
  const auto columns = static_cast<std::size_t>(tensor.columns);
  const std::size_t row_bytes = columns * clp::element_size(type);
  const bool zero_check = tensor.is_matrix() && columns > 1 && !is_token_row.empty();
  stream_bytes_of(tensor, row_bytes, [&](std::uint64_t offset, const void* bytes, std::size_t size) {
    clp::visit_element_type(type, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      const T* values = static_cast<const T*>(bytes);
      const auto first = static_cast<std::int64_t>(offset / row_bytes);
      for (std::size_t r = 0; r < size / row_bytes; ++r) {
        bool zero = true;
        for (std::size_t c = 0; c < columns; ++c) {
          const double x = std::is_same_v<T, double> ? double(values[r * columns + c])
                                                     : double(static_cast<float>(values[r * columns + c]));
          zero = zero && x == 0;
          if (std::isfinite(x)) continue;
          if (scan.non_finite++ == 0) {
            scan.first_row = first + std::int64_t(r);
            scan.first_column = std::int64_t(c);
          }
        }
        const std::size_t row = static_cast<std::size_t>(first) + r;
        if (zero && zero_check && row < is_token_row.size() && is_token_row[row])
          scan.zero_rows.push_back(std::int64_t(row));
      }
    });
  });
  return scan;
}

/// The rows of `rows` that are tokens' (a token of `tokens` has the id) and not the pad token's.
/// @param[in] tokens   the tokenizer's vocabulary
/// @param[in] rows     the tensor's rows
/// @param[in] pad_ids  ids of the pad token, left alone
inline std::vector<bool> token_rows(const token_index& tokens, std::int64_t rows,
                                    const std::vector<std::int64_t>& pad_ids) {
  std::vector<bool> used(static_cast<std::size_t>(rows), false);
  for (const auto& [token, id] : tokens.vocabulary().ids)
    if (id < rows) used[static_cast<std::size_t>(id)] = true;
  for (std::int64_t id : pad_ids)
    if (id >= 0 && id < rows) used[static_cast<std::size_t>(id)] = false;
  return used;
}

/// NaN and infinite values in every floating-point per-token tensor, and all-zero token rows in
/// its matrices (see the top of this file).
/// @param[in]  tensors   the folder's per-token tensors
/// @param[in]  tokens    the tokenizer's vocabulary; null where there is none
/// @param[in]  pad_ids   ids of the pad token
/// @param[out] findings  up to two per tensor
inline void check_tensor_values(const token_tensors& tensors, const token_index* tokens,
                                const std::vector<std::int64_t>& pad_ids, std::vector<finding>& findings) {
  for (const token_tensor& t : tensors.tensors) {
    if (!detail::is_floating(t.entry->dtype)) continue;
    const value_scan scan = scan_values(t, tokens ? token_rows(*tokens, t.rows, pad_ids) : std::vector<bool>{});
    if (scan.non_finite > 0)
      findings.push_back({finding_kind::non_finite, t.file->path(),
                          "tensor " + io::quoted_name(t.name) + " holds " + std::to_string(scan.non_finite) +
                              (scan.non_finite == 1 ? " NaN or infinite value (at row "
                                                    : " NaN or infinite values (the first at row ") +
                              std::to_string(scan.first_row) + " column " + std::to_string(scan.first_column) +
                              "); every output that reads them is NaN, and training on them diverges"});
    if (scan.zero_rows.empty()) continue;
    std::vector<std::pair<std::int64_t, std::string>> examples;
    for (std::int64_t row : scan.zero_rows) examples.emplace_back(row, *tokens->token_of(row));
    findings.push_back({finding_kind::zero_row, t.file->path(),
                        "tensor " + io::quoted_name(t.name) + ": the rows of " + token_examples(std::move(examples)) +
                            " are all zero; the model gets nothing from these tokens, as from rows never trained"});
  }
}

}  // namespace clp_transfer::verify
