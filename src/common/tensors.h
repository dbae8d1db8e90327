#pragma once
// Small tensor helpers shared by the library's sources (private).

#include <ATen/ATen.h>

#include <sstream>
#include <string>
#include <vector>

namespace grafx::detail {

/// The values of an integer tensor (any shape), in memory order.
inline std::vector<int64_t> to_vector(const at::Tensor& tensor) {
  at::Tensor t = tensor.to(at::kLong).contiguous();
  return {t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel()};
}

/// "[2, 1024]": how messages show shapes.
inline std::string shape_text(at::IntArrayRef sizes) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < sizes.size(); ++i) s << (i ? ", " : "") << sizes[i];
  return s.str() + "]";
}

/// "float32", "float64", ...: how messages show dtypes.
inline std::string dtype_name(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat:
      return "float32";
    case at::kDouble:
      return "float64";
    case at::kHalf:
      return "float16";
    case at::kBFloat16:
      return "bfloat16";
    default:
      return c10::toString(dtype);
  }
}

}  // namespace grafx::detail
