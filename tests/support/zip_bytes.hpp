// Zip archives and torch checkpoints as bytes, written from the formats' definitions (PKWARE's
// APPNOTE for zip; torch.save's layout of PREFIX/data.pkl, PREFIX/data/KEY, PREFIX/byteorder;
// pickle protocol 2 as torch writes a state dict) for tests that build or break them by hand.
// Shares no code with the readers they test.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace clp_test {

/// `value` as `size` little-endian bytes.
inline std::string little_endian(std::uint64_t value, int size) {
  std::string bytes;
  for (int i = 0; i < size; ++i) bytes += static_cast<char>(value >> (8 * i) & 0xFF);
  return bytes;
}

/// One member of an archive: its name, its bytes, and how the headers describe it.
struct zip_member {
  std::string name, data;
  std::uint16_t method = 0;  ///< 0 stored, 8 deflated (the bytes are not compressed here)
  std::uint16_t flags = 0;   ///< bit 0: encrypted
};

/// A zip archive of `members`, stored in order. With `zip64`, the central directory gives every
/// size and offset as 0xFFFFFFFF with a zip64 extra field, and a zip64 end of central directory
/// record and locator precede the end record (as torch writes them).
inline std::string zip_bytes(const std::vector<zip_member>& members, bool zip64 = false) {
  std::string file, directory;
  for (const zip_member& m : members) {
    const std::uint64_t header = file.size();
    file += "PK\x03\x04" + little_endian(20, 2) + little_endian(m.flags, 2) + little_endian(m.method, 2) +
            little_endian(0, 8) + little_endian(m.data.size(), 4) + little_endian(m.data.size(), 4) +
            little_endian(m.name.size(), 2) + little_endian(0, 2) + m.name + m.data;
    const std::string extra =
        zip64 ? little_endian(1, 2) + little_endian(24, 2) + little_endian(m.data.size(), 8) +
                    little_endian(m.data.size(), 8) + little_endian(header, 8)
              : std::string();
    const std::uint64_t all_ones = 0xFFFFFFFF;
    directory += "PK\x01\x02" + little_endian(45, 2) + little_endian(45, 2) + little_endian(m.flags, 2) +
                 little_endian(m.method, 2) + little_endian(0, 8) + little_endian(zip64 ? all_ones : m.data.size(), 4) +
                 little_endian(zip64 ? all_ones : m.data.size(), 4) + little_endian(m.name.size(), 2) +
                 little_endian(extra.size(), 2) + little_endian(0, 6) + little_endian(0, 4) +
                 little_endian(zip64 ? all_ones : header, 4) + m.name + extra;
  }
  const std::uint64_t directory_at = file.size();
  file += directory;
  if (zip64) {
    const std::uint64_t record_at = file.size();
    file += "PK\x06\x06" + little_endian(44, 8) + little_endian(45, 2) + little_endian(45, 2) + little_endian(0, 8) +
            little_endian(members.size(), 8) + little_endian(members.size(), 8) + little_endian(directory.size(), 8) +
            little_endian(directory_at, 8);
    file += "PK\x06\x07" + little_endian(0, 4) + little_endian(record_at, 8) + little_endian(1, 4);
  }
  file += "PK\x05\x06" + little_endian(0, 4) + little_endian(members.size(), 2) + little_endian(members.size(), 2) +
          little_endian(directory.size(), 4) + little_endian(directory_at, 4) + little_endian(0, 2);
  return file;
}

// --- pickles, protocol 2, as torch.save writes a state dict

/// BINUNICODE: a str.
inline std::string pickle_str(const std::string& text) { return "X" + little_endian(text.size(), 4) + text; }
/// GLOBAL module.name.
inline std::string pickle_global(const std::string& module, const std::string& name) {
  return "c" + module + "\n" + name + "\n";
}
/// An int: BININT1 below 256, BININT below 2^31, else LONG1 of 8 bytes.
inline std::string pickle_int(std::int64_t value) {
  if (value >= 0 && value < 256) return "K" + little_endian(static_cast<std::uint64_t>(value), 1);
  if (value >= -(std::int64_t{1} << 31) && value < (std::int64_t{1} << 31))
    return "J" + little_endian(static_cast<std::uint64_t>(value), 4);
  return "\x8a\x08" + little_endian(static_cast<std::uint64_t>(value), 8);
}
/// A tuple of ints (MARK ... TUPLE).
inline std::string pickle_ints(const std::vector<std::int64_t>& values) {
  std::string bytes = "(";
  for (std::int64_t v : values) bytes += pickle_int(v);
  return bytes + "t";
}

/// One tensor of a state dict, as torch.save pickles it.
struct pickled_tensor {
  std::string name;
  std::string storage_type;  ///< "FloatStorage", ...
  std::string key;           ///< its storage's record: data/KEY
  std::int64_t storage_elements = 0, offset = 0;
  std::vector<std::int64_t> shape, stride;
};

/// The pickle expression of one tensor: torch._utils._rebuild_tensor_v2(persistent id
/// ('storage', torch.TYPE, KEY, 'cpu', N), offset, size, stride, False, OrderedDict()).
/// `rebuild` replaces the rebuild function's name.
inline std::string pickle_tensor(const pickled_tensor& t, const std::string& rebuild = "_rebuild_tensor_v2") {
  return pickle_global("torch._utils", rebuild) + "((" + pickle_str("storage") + pickle_global("torch", t.storage_type) +
         pickle_str(t.key) + pickle_str("cpu") + pickle_int(t.storage_elements) + "tQ" + pickle_int(t.offset) +
         pickle_ints(t.shape) + pickle_ints(t.stride) + "\x89" + pickle_global("collections", "OrderedDict") + ")Rt" +
         "R";
}

/// The pickle of a state dict of `tensors` (a name may repeat): a collections.OrderedDict of
/// each name and pickle_tensor.
inline std::string state_dict_pickle(const std::vector<pickled_tensor>& tensors,
                                     const std::string& rebuild = "_rebuild_tensor_v2") {
  std::string p = "\x80\x02" + pickle_global("collections", "OrderedDict") + ")R(";
  for (const pickled_tensor& t : tensors) p += pickle_str(t.name) + pickle_tensor(t, rebuild);
  return p + "u.";
}

/// A torch checkpoint archive under `prefix`: data.pkl, then each storage as data/KEY, then
/// byteorder "little" and version, as torch.save orders them.
inline std::string torch_zip_bytes(const std::string& prefix, const std::string& pickle,
                                   const std::vector<std::pair<std::string, std::string>>& storages,
                                   const std::string& byteorder = "little") {
  std::vector<zip_member> members{{prefix + "/data.pkl", pickle}};
  for (const auto& [key, bytes] : storages) members.push_back({prefix + "/data/" + key, bytes});
  if (!byteorder.empty()) members.push_back({prefix + "/byteorder", byteorder});
  members.push_back({prefix + "/version", "3\n"});
  return zip_bytes(members, true);
}

}  // namespace clp_test
