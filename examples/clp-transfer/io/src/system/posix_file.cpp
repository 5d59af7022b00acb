#include "io/system/posix_file.hpp"

namespace clp_transfer::io {

void read_exactly(const std::filesystem::path& path, int fd, void* buffer, std::size_t size, std::uint64_t offset,
                  const std::string& what) {
  auto* out = static_cast<char*>(buffer);
  while (size > 0) {
    const ssize_t got = ::pread(fd, out, size, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) failed(path, "reading " + what);
    if (got == 0) throw truncated_file(path, offset + size, offset, what);
    out += got;
    size -= static_cast<std::size_t>(got);
    offset += static_cast<std::uint64_t>(got);
  }
}

void write_exactly(const std::filesystem::path& path, int fd, const void* data, std::size_t size,
                   std::uint64_t offset) {
  const auto* in = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t put = ::pwrite(fd, in, size, static_cast<off_t>(offset));
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) failed(path, "writing");
    in += put;
    size -= static_cast<std::size_t>(put);
    offset += static_cast<std::uint64_t>(put);
  }
}

}  // namespace clp_transfer::io
