#include "io/tokenizer/protobuf_wire.hpp"

namespace clp_transfer::io {

float protobuf_float(std::uint64_t bits) {
  const auto narrow = static_cast<std::uint32_t>(bits);
  float value;
  std::memcpy(&value, &narrow, sizeof value);
  return value;
}

}  // namespace clp_transfer::io
