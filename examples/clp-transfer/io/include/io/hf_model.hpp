// Hugging Face model folders as clp-transfer reads and writes them, one header for each part:
// JSON files (io/json/file.hpp), the tokenizer's vocabulary (io/tokenizer/tokenizer_json.hpp,
// io/tokenizer/sentencepiece.hpp, io/tokenizer/wordpiece.hpp, io/tokenizer/vocabulary.hpp, io/tokenizer/files.hpp),
// the weights, safetensors or torch checkpoints (io/model_weights.hpp, io/weight_file.hpp),
// which tensors are the embeddings (io/embedding_names.hpp), and an output folder that appears
// under its final name only once complete (io/output_folder.hpp). Every refusal is a clp::error
// naming the file at fault (io/errors.hpp).
#pragma once

#include "io/embedding_names.hpp"
#include "io/errors.hpp"
#include "io/json/file.hpp"
#include "io/model_weights.hpp"
#include "io/output_folder.hpp"
#include "io/tokenizer/files.hpp"
#include "io/tokenizer/sentencepiece.hpp"
#include "io/tokenizer/tokenizer_json.hpp"
#include "io/tokenizer/vocabulary.hpp"
#include "io/tokenizer/wordpiece.hpp"
#include "io/weight_file.hpp"
