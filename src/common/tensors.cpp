#include <grafx/tensors.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>
#include <vector>

namespace grafx {

at::Tensor non_finite_rows(const at::Tensor& x, int64_t kept) {
  constexpr int64_t kSlice = int64_t(1) << 16;
  at::Tensor values        = x.dim() == 0 ? x.detach().view({1}) : x.detach();
  // A row's sum is non-finite where the row holds NaN or ±∞, and otherwise only where finite
  // values overflow it: one pass of one reduction, and a closer look only at such a sum.
  std::vector<int64_t> reduced(size_t(values.dim() - kept));
  std::iota(reduced.begin(), reduced.end(), kept);
  at::Tensor sums = values.sum(reduced);
  if (sums.isfinite().all().item<bool>())
    return at::zeros(sums.sizes(), sums.options().dtype(at::kBool));
  at::Tensor bad;
  for (int64_t start = 0;; start += kSlice) {
    at::Tensor slice = values.narrow(-1, start, std::min(kSlice, values.size(-1) - start));
    at::Tensor here  = (~slice.isfinite()).flatten(kept).any(-1);
    bad              = bad.defined() ? bad.logical_or(here) : here;
    if (start + kSlice >= values.size(-1)) break;
  }
  return bad;
}

bool all_finite(const at::Tensor& x) { return !non_finite_rows(x, 0).item<bool>(); }

}  // namespace grafx
