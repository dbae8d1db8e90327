#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/io/safetensors.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>

namespace grafx {
namespace {

using json = nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100'000'000;

const std::vector<std::pair<const char*, at::ScalarType>>& dtypes() {
  static const std::vector<std::pair<const char*, at::ScalarType>> table = {
      {"BOOL", at::kBool}, {"U8", at::kByte},   {"I8", at::kChar},  {"I16", at::kShort},
      {"I32", at::kInt},   {"I64", at::kLong},  {"F16", at::kHalf}, {"BF16", at::kBFloat16},
      {"F32", at::kFloat}, {"F64", at::kDouble}};
  return table;
}

static_assert(sizeof(uint64_t) == 8, "");

}  // namespace

void save_safetensors(const std::string& path, const TensorDict& tensors,
                      const std::map<std::string, std::string>& metadata, bool overwrite) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<at::Tensor> data;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__")
      throw IoError("grafx.io.format", path + ": \"__metadata__\" is not a tensor name");
    auto it = std::find_if(dtypes().begin(), dtypes().end(),
                           [&](const auto& d) { return d.second == tensor.scalar_type(); });
    if (it == dtypes().end())
      throw IoError("grafx.io.format",
                    path + ": tensor \"" + name + "\" has a dtype safetensors cannot hold");
    at::Tensor t   = tensor.detach().to(at::kCPU).contiguous();
    uint64_t bytes = uint64_t(t.numel()) * uint64_t(t.element_size());
    header[name]   = {{"dtype", it->first},
                      {"shape", t.sizes().vec()},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(t);
  }
  std::string text = header.dump(-1, ' ', false, json::error_handler_t::replace);
  text.append((8 - text.size() % 8) % 8, ' ');  // align the data to 8 bytes
  write_atomically(path, overwrite, [&](const std::string& temporary) {
    std::ofstream out(temporary, std::ios::binary);
    uint64_t length = text.size();
    unsigned char prefix[8];
    for (int i = 0; i < 8; ++i)
      prefix[i] = static_cast<unsigned char>(length >> (8 * i));  // little-endian
    out.write(reinterpret_cast<const char*>(prefix), 8);
    out.write(text.data(), std::streamsize(text.size()));
    for (const auto& t : data)
      out.write(static_cast<const char*>(t.data_ptr()),
                std::streamsize(t.numel() * t.element_size()));
    out.close();
    if (!out) throw IoError("grafx.io.unwritable", path + ": write failed");
  });
}

SafetensorsFile load_safetensors(const std::string& path) {
  return parse_safetensors(read_text_file(path), path);
}

SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& path) {
  auto fail = [&](const std::string& what) -> void {
    throw IoError("grafx.io.format", path + ": " + what);
  };
  if (bytes.size() < 8)
    fail("too short for a safetensors file (" + std::to_string(bytes.size()) + " bytes)");
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i)
    length |= uint64_t(static_cast<unsigned char>(bytes[size_t(i)])) << (8 * i);
  if (length > kMaxHeaderBytes || length > bytes.size() - 8)
    fail("header length " + std::to_string(length) + " exceeds the file (" +
         std::to_string(bytes.size()) + " bytes)");
  json header;
  try {
    header = json::parse(bytes.begin() + 8, bytes.begin() + 8 + int64_t(length));
  } catch (const json::exception& e) {
    fail(std::string("invalid JSON header: ") + e.what());
  }
  if (!header.is_object()) fail("the header is not a JSON object");
  const uint64_t data_size = bytes.size() - 8 - length;
  const char* data         = bytes.data() + 8 + length;
  SafetensorsFile file;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail("__metadata__: expected an object of strings");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) fail("__metadata__." + key + ": expected a string");
        file.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    std::string where = "tensor \"" + name + "\": ";
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets"))
      fail(where + "expected an object with dtype, shape and data_offsets");
    const json& dtype = entry["dtype"];
    auto it           = std::find_if(dtypes().begin(), dtypes().end(), [&](const auto& d) {
      return dtype.is_string() && dtype.get<std::string>() == d.first;
    });
    if (it == dtypes().end()) fail(where + "unsupported dtype " + dtype.dump());
    std::vector<int64_t> shape;
    constexpr uint64_t kLargest = uint64_t{1} << 40;  // elements of one tensor
    uint64_t numel              = 1;
    if (!entry["shape"].is_array()) fail(where + "shape: expected an array");
    for (const auto& d : entry["shape"]) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > kLargest)
        fail(where + "shape: expected sizes ≥ 0");
      shape.push_back(d.get<int64_t>());
      const uint64_t size = d.get<uint64_t>();
      if (size != 0 && numel > kLargest / size)  // checked before multiplying: never wraps
        fail(where + "shape is too large");
      numel *= size;
    }
    const json& offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned())
      fail(where + "data_offsets: expected [begin, end]");
    uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    uint64_t element = uint64_t(c10::elementSize(it->second));
    if (begin > end || end > data_size)
      fail(where + "data_offsets outside the data (" + std::to_string(data_size) + " bytes)");
    if (end - begin != numel * element)
      fail(where + "data_offsets span " + std::to_string(end - begin) +
           " bytes, but the shape needs " + std::to_string(numel * element));
    at::Tensor t = at::empty(shape, at::TensorOptions().dtype(it->second));
    if (numel > 0) std::memcpy(t.data_ptr(), data + begin, size_t(end - begin));
    file.tensors[name] = t;
    ranges.emplace_back(begin, end);
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t covered = 0;
  for (const auto& [begin, end] : ranges) {
    if (begin != covered)
      fail("tensor data overlaps or leaves gaps (at byte " + std::to_string(begin) + ")");
    covered = end;
  }
  if (covered != data_size)
    fail("tensor data does not fill the file (" + std::to_string(data_size - covered) +
         " bytes left)");
  return file;
}

}  // namespace grafx
