// Safetensors checkpoints, read and written without holding tensor data in memory: the reader
// (io/safetensors/reader.hpp, its header check in io/safetensors/header.hpp) and the streaming
// writer (io/safetensors/writer.hpp), over the format's shared pieces (io/safetensors/format.hpp).
#pragma once

#include "io/safetensors/format.hpp"
#include "io/safetensors/reader.hpp"
#include "io/safetensors/writer.hpp"
