#pragma once
// Small tensor helpers shared by the library's sources (private).

#include <ATen/ATen.h>

#include <algorithm>
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

/// Whether each row of `x` holds a NaN or an infinity: a bool tensor of x's first `kept`
/// dimensions (a scalar for kept = 0), the rest reduced. Scanned in slices of the last
/// dimension, so that the temporaries stay small however long x is (isfinite on a whole song at
/// once allocates several bytes per sample).
inline at::Tensor non_finite_rows(const at::Tensor& x, int64_t kept) {
  constexpr int64_t kSlice = int64_t(1) << 16;
  at::Tensor values        = x.dim() == 0 ? x.detach().view({1}) : x.detach();
  at::Tensor bad;
  for (int64_t start = 0; start < values.size(-1) || start == 0; start += kSlice) {
    at::Tensor slice = values.narrow(-1, start, std::min(kSlice, values.size(-1) - start));
    at::Tensor here  = (~slice.isfinite()).flatten(kept).any(-1);
    bad              = bad.defined() ? bad.logical_or(here) : here;
    if (start + kSlice >= values.size(-1)) break;
  }
  return bad;
}

/// Whether every value of `x` is finite (in small slices, as non_finite_rows).
inline bool all_finite(const at::Tensor& x) { return !non_finite_rows(x, 0).item<bool>(); }

}  // namespace grafx::detail
