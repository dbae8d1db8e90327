#pragma once
/// The safetensors format (https://github.com/huggingface/safetensors), so Python tools read and
/// write grafx parameter files: an 8-byte little-endian header length, a JSON header mapping
/// each name to {"dtype", "shape", "data_offsets"} (plus an optional "__metadata__" object of
/// strings), then the tensors' bytes, row-major and little-endian, back to back.

#include <grafx/processors/processor.h>

#include <map>
#include <string>

namespace grafx {

struct SafetensorsFile {
  TensorDict tensors;
  std::map<std::string, std::string> metadata;
};

/// Writes atomically; tensors are written in name order (CPU, contiguous, as stored).
/// Supported dtypes: bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64.
void save_safetensors(const std::string& path, const TensorDict& tensors,
                      const std::map<std::string, std::string>& metadata = {},
                      bool overwrite                                     = false);

/// Reads and validates a file: header length within the file, JSON header, known dtypes, shapes
/// and offsets that match and tile the data exactly. Throws IoError [grafx.io.format] naming the
/// file and the tensor or field.
SafetensorsFile load_safetensors(const std::string& path);
/// The same from the bytes of a file in memory; `name` is the file named in errors.
SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& name);

}  // namespace grafx
