// Safetensors checkpoints, read and written without holding tensor data in memory: the reader
// (io/safetensors_reader.hpp, its header check in io/safetensors_header.hpp) and the streaming
// writer (io/safetensors_writer.hpp), over the format's shared pieces (io/safetensors_format.hpp).
#pragma once

#include "io/safetensors_format.hpp"
#include "io/safetensors_reader.hpp"
#include "io/safetensors_writer.hpp"
