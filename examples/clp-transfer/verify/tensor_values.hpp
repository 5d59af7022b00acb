// The values of the per-token tensors: NaN or infinite values, and rows of tokens that are all
// zero. A tensor's rows are read and scanned in blocks of a few MB on every worker (a few MB of
// memory each, whatever the tensor's size), each row tested on its raw bits first.
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
#include <clp/parallel.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
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

/// What a scan of a tensor's values found (scan_values, scan_rows).
struct value_scan {
  std::int64_t non_finite = 0;                     ///< NaN and infinite values
  std::int64_t first_row = -1, first_column = -1;  ///< the first of them
  std::vector<std::int64_t> zero_rows;             ///< the rows that are all zero, ascending

  /// Adds what a later stretch of rows found.
  void add(const value_scan& later) {
    if (non_finite == 0 && later.non_finite > 0) first_row = later.first_row, first_column = later.first_column;
    non_finite += later.non_finite;
    zero_rows.insert(zero_rows.end(), later.zero_rows.begin(), later.zero_rows.end());
  }
};

namespace detail {

/// The bits of an element type: an element is NaN or infinite when all of `exponent` is set,
/// and zero (of either sign) when none of `magnitude` is.
template <class T>
struct element_bits;
template <>
struct element_bits<float> {
  using type = std::uint32_t;
  static constexpr type exponent = 0x7F800000u, magnitude = 0x7FFFFFFFu;
};
template <>
struct element_bits<double> {
  using type = std::uint64_t;
  static constexpr type exponent = 0x7FF0000000000000u, magnitude = 0x7FFFFFFFFFFFFFFFu;
};
template <>
struct element_bits<Eigen::half> {
  using type = std::uint16_t;
  static constexpr type exponent = 0x7C00u, magnitude = 0x7FFFu;
};
template <>
struct element_bits<Eigen::bfloat16> {
  using type = std::uint16_t;
  static constexpr type exponent = 0x7F80u, magnitude = 0x7FFFu;
};

/// The raw bits of x.
template <class T>
typename element_bits<T>::type bits_of(const T& x) {
  typename element_bits<T>::type b;
  std::memcpy(&b, &x, sizeof(b));
  return b;
}

/// `count` rows of `columns` elements of type T at `rows`, the tensor's rows from `first` on:
/// each row's bits read in a loop the compiler vectorises; only a row that holds a NaN or an
/// infinity is read again, element by element, to find and count them.
template <class T>
value_scan scan_typed_rows(const T* rows, std::size_t columns, std::int64_t first, std::int64_t count) {
  using bits = element_bits<T>;
  using U = typename bits::type;
  value_scan scan;
  for (std::int64_t r = 0; r < count; ++r) {
    const T* row = rows + std::size_t(r) * columns;
    U non_finite = 0, magnitudes = 0;
    for (std::size_t c = 0; c < columns; ++c) {
      const U b = bits_of(row[c]);
      non_finite |= U((b & bits::exponent) == bits::exponent);
      magnitudes |= b & bits::magnitude;
    }
    if (non_finite != 0)
      for (std::size_t c = 0; c < columns; ++c) {
        if ((bits_of(row[c]) & bits::exponent) != bits::exponent) continue;
        if (scan.non_finite++ == 0) scan.first_row = first + r, scan.first_column = std::int64_t(c);
      }
    if (magnitudes == 0) scan.zero_rows.push_back(first + r);
  }
  return scan;
}

}  // namespace detail

/// Scans rows [first, first + count) of a row-major tensor of `columns` values of `type` a row,
/// `rows` pointing at row `first`.
inline value_scan scan_rows(clp::element_type type, const void* rows, std::size_t columns, std::int64_t first,
                            std::int64_t count) {
  return clp::visit_element_type(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    return detail::scan_typed_rows(static_cast<const T*>(rows), columns, first, count);
  });
}

/// Scans every value of `tensor`, a floating-point per-token tensor, read in blocks of about
/// stream_bytes by each worker into a buffer of its own, the blocks' scans added in order.
/// @param[in] tensor   F32, F64, F16 or BF16; #rows by #columns values in row-major order
/// @param[in] threads  workers (0: every hardware thread); no finding depends on it
inline value_scan scan_values(const token_tensor& tensor, int threads) {
  const clp::element_type type = *element_type_of(tensor.entry->dtype);
  const auto columns = static_cast<std::size_t>(tensor.columns);
  const std::size_t row_bytes = columns * clp::element_size(type);
  if (row_bytes == 0 || tensor.entry->byte_size == 0) return {};
  const auto rows = static_cast<std::int64_t>(tensor.entry->byte_size / row_bytes);
  const std::int64_t block = std::max<std::int64_t>(1, std::int64_t(stream_bytes / row_bytes));
  std::vector<value_scan> blocks(static_cast<std::size_t>((rows + block - 1) / block));
  const int workers = clp::resolve_threads(threads);
  std::vector<std::vector<double>> buffers(static_cast<std::size_t>(workers));  // aligned for any element
  clp::parallel_for(clp::Index(blocks.size()), workers, [&](clp::Index b, int worker) {
    const std::int64_t first = b * block, count = std::min(block, rows - first);
    const std::size_t size = std::size_t(count) * row_bytes;
    std::vector<double>& buffer = buffers[std::size_t(worker)];
    buffer.resize((size + sizeof(double) - 1) / sizeof(double));
    io::read_exactly(tensor.file->path(), tensor.file->descriptor(), buffer.data(), size,
                     tensor.entry->offset + std::uint64_t(first) * row_bytes, "tensor " + io::quoted_name(tensor.name));
    blocks[std::size_t(b)] = scan_rows(type, buffer.data(), columns, first, count);
  });
  value_scan scan;
  for (const value_scan& part : blocks) scan.add(part);
  return scan;
}

/// The values of the tensors a program scanned as it wrote them, by tensor name: check_tensor_values
/// takes these instead of reading the tensors back.
using value_scans = std::map<std::string, value_scan>;

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
/// @param[in]  threads   workers (0: every hardware thread)
/// @param[in]  scanned   tensors whose values are known already (the bytes a program wrote);
///                       every other tensor is read
inline void check_tensor_values(const token_tensors& tensors, const token_index* tokens,
                                const std::vector<std::int64_t>& pad_ids, std::vector<finding>& findings, int threads,
                                const value_scans& scanned) {
  for (const token_tensor& t : tensors.tensors) {
    if (!detail::is_floating(t.entry->dtype)) continue;
    const auto known = scanned.find(t.name);
    const value_scan scan = known != scanned.end() ? known->second : scan_values(t, threads);
    if (scan.non_finite > 0)
      findings.push_back({finding_kind::non_finite, t.file->path(),
                          "tensor " + io::quoted_name(t.name) + " holds " + std::to_string(scan.non_finite) +
                              (scan.non_finite == 1 ? " NaN or infinite value (at row "
                                                    : " NaN or infinite values (the first at row ") +
                              std::to_string(scan.first_row) + " column " + std::to_string(scan.first_column) +
                              "); every output that reads them is NaN, and training on them diverges"});
    if (!tokens || !t.is_matrix() || t.columns <= 1) continue;
    const std::vector<bool> is_token_row = token_rows(*tokens, t.rows, pad_ids);
    std::vector<std::pair<std::int64_t, std::string>> examples;
    for (std::int64_t row : scan.zero_rows)
      if (row < std::int64_t(is_token_row.size()) && is_token_row[std::size_t(row)])
        examples.emplace_back(row, *tokens->token_of(row));
    if (examples.empty()) continue;
    findings.push_back({finding_kind::zero_row, t.file->path(),
                        "tensor " + io::quoted_name(t.name) + ": the rows of " + token_examples(std::move(examples)) +
                            " are all zero; the model gets nothing from these tokens, as from rows never trained"});
  }
}

}  // namespace clp_transfer::verify
