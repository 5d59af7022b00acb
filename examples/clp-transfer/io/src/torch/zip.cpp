#include "io/torch/zip.hpp"

namespace clp_transfer::io {

namespace detail {

zip_directory_location locate_zip_directory(const std::filesystem::path& path, int fd, std::uint64_t size) {
  if (size < 22) malformed(path, "file is " + std::to_string(size) + " bytes, too short for a zip archive");
  const std::uint64_t tail_size = std::min<std::uint64_t>(size, 22 + 0xFFFF + 20);
  std::string tail(static_cast<std::size_t>(tail_size), '\0');
  read_exactly(path, fd, tail.data(), tail.size(), size - tail_size, "the end of the zip archive");
  const zip_fields fields(tail);
  std::size_t record = std::string::npos;
  for (std::size_t i = tail.size() - 22 + 1; i-- > 0;)
    if (tail.compare(i, 4, "PK\x05\x06") == 0 && i + 22 + fields.at(i + 20, 2) == tail.size()) {
      record = i;
      break;
    }
  if (record == std::string::npos)
    malformed(path, "no end of central directory record: not a zip archive, or a truncated one");
  if (fields.at(record + 4, 2) != 0 || fields.at(record + 6, 2) != 0) malformed(path, "a zip archive on several disks");
  zip_directory_location where{fields.at(record + 16, 4), fields.at(record + 12, 4), fields.at(record + 10, 2),
                               size - tail_size + record};
  if (record < 20 || tail.compare(record - 20, 4, "PK\x06\x07") != 0) return where;
  // zip64: the locator names the zip64 end of central directory record, whose fields are 64-bit.
  const std::uint64_t zip64_at = fields.at(record - 20 + 8, 8);
  if (zip64_at > where.end || where.end - zip64_at < 56) malformed(path, "a zip64 locator that points past its record");
  std::string zip64(56, '\0');
  read_exactly(path, fd, zip64.data(), zip64.size(), zip64_at, "the zip64 end of central directory record");
  const zip_fields z(zip64);
  if (zip64.compare(0, 4, "PK\x06\x06") != 0)
    malformed(path, "no zip64 end of central directory record where its locator points");
  if (z.at(16, 4) != 0 || z.at(20, 4) != 0) malformed(path, "a zip archive on several disks");
  return {z.at(48, 8), z.at(40, 8), z.at(32, 8), zip64_at};
}

void apply_zip64_extra(const std::filesystem::path& path, std::string_view extra, const std::string& name,
                       std::uint64_t& size, std::uint64_t& compressed, std::uint64_t& header) {
  const zip_fields fields(extra);
  for (std::size_t at = 0; at + 4 <= extra.size();) {
    const std::uint64_t id = fields.at(at, 2), length = fields.at(at + 2, 2);
    if (at + 4 + length > extra.size()) malformed(path, "entry " + quoted_name(name) + " has a truncated extra field");
    if (id == 1) {
      std::size_t next = at + 4;
      for (std::uint64_t* value : {&size, &compressed, &header}) {
        if (*value != 0xFFFFFFFF) continue;
        if (next + 8 > at + 4 + length)
          malformed(path, "entry " + quoted_name(name) + " has a zip64 field too short for its sizes");
        *value = fields.at(next, 8);
        next += 8;
      }
    }
    at += 4 + static_cast<std::size_t>(length);
  }
}

std::size_t read_directory_entry(const std::filesystem::path& path, std::string_view directory, std::size_t at,
                                 zip_entry& entry) {
  const zip_fields fields(directory);
  if (directory.size() - at < 46 || directory.compare(at, 4, "PK\x01\x02") != 0)
    malformed(path, "central directory entry at byte " + std::to_string(at) + " of the directory is not one");
  const std::uint64_t flags = fields.at(at + 8, 2), method = fields.at(at + 10, 2);
  std::uint64_t compressed = fields.at(at + 20, 4), size = fields.at(at + 24, 4), header = fields.at(at + 42, 4);
  const std::size_t name_length = fields.at(at + 28, 2), extra_length = fields.at(at + 30, 2),
                    comment_length = fields.at(at + 32, 2);
  if (directory.size() - at - 46 < name_length + extra_length + comment_length)
    malformed(path, "central directory entry at byte " + std::to_string(at) + " of the directory runs past it");
  entry.name = std::string(directory.substr(at + 46, name_length));
  apply_zip64_extra(path, directory.substr(at + 46 + name_length, extra_length), entry.name, size, compressed, header);
  if (flags & 1) malformed(path, "entry " + quoted_name(entry.name) + " is encrypted");
  if (method != 0)
    malformed(path, "entry " + quoted_name(entry.name) + " is compressed (method " + std::to_string(method) +
                        "); torch.save stores its entries uncompressed, and only such entries are read");
  if (compressed != size)
    malformed(path, "entry " + quoted_name(entry.name) + " is stored, but its sizes differ (" +
                        std::to_string(compressed) + " and " + std::to_string(size) + ")");
  entry.header = header;
  entry.size = size;
  return at + 46 + name_length + extra_length + comment_length;
}

void read_local_header(const std::filesystem::path& path, int fd, std::uint64_t limit, zip_entry& entry) {
  const std::string name = quoted_name(entry.name);
  if (entry.header > limit || limit - entry.header < 30)
    malformed(path, "entry " + name + " has its local header past the central directory");
  std::string fixed(30, '\0');
  read_exactly(path, fd, fixed.data(), fixed.size(), entry.header, "the local header of entry " + name);
  const zip_fields fields(fixed);
  if (fixed.compare(0, 4, "PK\x03\x04") != 0 || fields.at(8, 2) != 0)
    malformed(path, "entry " + name + " has no local header of a stored entry where the directory says");
  const std::uint64_t name_length = fields.at(26, 2), extra_length = fields.at(28, 2);
  std::string local_name(static_cast<std::size_t>(name_length), '\0');
  if (limit - entry.header - 30 < name_length + extra_length)
    malformed(path, "entry " + name + " has a local header that runs into the central directory");
  read_exactly(path, fd, local_name.data(), local_name.size(), entry.header + 30, "the local header of entry " + name);
  if (local_name != entry.name)
    malformed(path, "entry " + name + " is named " + quoted_name(local_name) + " in its local header");
  entry.offset = entry.header + 30 + name_length + extra_length;
  if (entry.size > limit - entry.offset)
    malformed(path, "entry " + name + " (" + std::to_string(entry.size) + " bytes) runs into the central directory");
}

}  // namespace detail

std::vector<zip_entry> read_zip_entries(const std::filesystem::path& path, int fd, std::uint64_t size) {
  const detail::zip_directory_location where = detail::locate_zip_directory(path, fd, size);
  if (where.offset > where.end || where.size > where.end - where.offset)
    malformed(path, "the central directory (" + std::to_string(where.size) + " bytes at " +
                        std::to_string(where.offset) + ") runs past its end record");
  if (where.size > max_zip_directory_bytes)
    malformed(path, "a central directory of " + std::to_string(where.size) + " bytes (corrupt file?)");
  if (where.entries > where.size / 46)
    malformed(path, std::to_string(where.entries) + " entries cannot fit a central directory of " +
                        std::to_string(where.size) + " bytes");
  std::string directory(static_cast<std::size_t>(where.size), '\0');
  read_exactly(path, fd, directory.data(), directory.size(), where.offset, "the central directory");
  std::vector<zip_entry> entries(static_cast<std::size_t>(where.entries));
  std::unordered_set<std::string_view> names;
  std::size_t at = 0;
  for (zip_entry& entry : entries) {
    at = detail::read_directory_entry(path, directory, at, entry);
    detail::read_local_header(path, fd, where.offset, entry);
  }
  if (at != directory.size())
    malformed(path, "the central directory holds " + std::to_string(directory.size() - at) + " bytes after its " +
                        std::to_string(entries.size()) + " entries");
  for (const zip_entry& entry : entries)
    if (!names.insert(entry.name).second) malformed(path, "entry " + quoted_name(entry.name) + " appears twice");
  std::sort(entries.begin(), entries.end(), [](const zip_entry& a, const zip_entry& b) { return a.header < b.header; });
  for (std::size_t i = 1; i < entries.size(); ++i)
    if (entries[i].header < entries[i - 1].offset + entries[i - 1].size)
      malformed(path,
                "entries " + quoted_name(entries[i - 1].name) + " and " + quoted_name(entries[i].name) + " overlap");
  return entries;
}

}  // namespace clp_transfer::io
