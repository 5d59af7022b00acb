// The directory of a zip archive whose entries are stored, as torch.save has written them since
// torch 1.6: the end of central directory record (and its zip64 form, which torch always adds),
// the central directory, and each entry's local header, so that every entry's bytes are known
// as a range of the file, read in place, never decompressed. A compressed or encrypted entry,
// an archive on several disks, entries that overlap each other or the directory, or a local
// header that disagrees with the directory is refused as a malformed_file naming the file.
// The entries' CRC-32s are not checked: that would read every byte of a checkpoint up front.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "io/errors.hpp"
#include "io/library_names.hpp"
#include "io/system/posix_file.hpp"

namespace clp_transfer::io {

/// One entry of the archive.
struct zip_entry {
  std::string name;
  std::uint64_t header = 0;  ///< offset of its local header in the file
  std::uint64_t offset = 0;  ///< offset of its first byte in the file
  std::uint64_t size = 0;    ///< its size (stored: the same compressed and not)
};

/// Largest central directory read (a checkpoint of a million tensors takes about 100 MB).
inline constexpr std::uint64_t max_zip_directory_bytes = 256ull << 20;

namespace detail {

/// Little-endian fields of a record held in memory, bounds-checked by the caller's sizes.
class zip_fields {
 public:
  explicit zip_fields(std::string_view bytes) : bytes_(bytes) {}
  std::uint64_t at(std::size_t offset, std::size_t size) const {
    std::uint64_t value = 0;
    for (std::size_t i = size; i-- > 0;) value = (value << 8) | static_cast<unsigned char>(bytes_[offset + i]);
    return value;
  }

 private:
  std::string_view bytes_;
};

/// Where the central directory is, from the end of central directory record.
struct zip_directory_location {
  std::uint64_t offset = 0, size = 0, entries = 0;
  std::uint64_t end = 0;  ///< where the records after the directory start
};

/// Finds the end of central directory record in the last 64 KiB of the file (it must end the
/// file, with its comment) and, when a zip64 locator precedes it, the zip64 record it names.
zip_directory_location locate_zip_directory(const std::filesystem::path& path, int fd, std::uint64_t size);

/// A zip64 extended information field's values for the directory fields that are all ones.
void apply_zip64_extra(const std::filesystem::path& path, std::string_view extra, const std::string& name,
                       std::uint64_t& size, std::uint64_t& compressed, std::uint64_t& header);

/// One central directory entry at `at` of `directory`; returns the offset of the next.
std::size_t read_directory_entry(const std::filesystem::path& path, std::string_view directory, std::size_t at,
                                 zip_entry& entry);

/// Resolves `entry`'s data offset from its local header, which must name it as the directory
/// does, and checks that its bytes end before `limit` (the central directory).
void read_local_header(const std::filesystem::path& path, int fd, std::uint64_t limit, zip_entry& entry);

}  // namespace detail

/// The entries of the zip archive open on `fd`, in the order of their local headers, each
/// checked as the header comment says. Throws malformed_file (io_error for a failed
/// read) naming `path`.
/// @param[in] path  the archive, for messages
/// @param[in] fd    open descriptor of it
/// @param[in] size  its size in bytes
std::vector<zip_entry> read_zip_entries(const std::filesystem::path& path, int fd, std::uint64_t size);

}  // namespace clp_transfer::io
