#include <grafx/tensors.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <numeric>
#include <utility>
#include <vector>

namespace grafx {

at::Tensor device_index(const std::vector<int64_t>& values, const at::Device& device) {
  if (device.is_cpu()) return at::tensor(values, at::kLong);
  // Never evicted: a captured graph may read any of them for as long as it lives. They are
  // small (rows of plans), and there are as many as there are distinct plans and sizes.
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::vector<int64_t>>, at::Tensor> made;
  std::lock_guard<std::mutex> lock(mutex);
  at::Tensor& tensor = made[{device.str(), values}];
  if (!tensor.defined()) tensor = at::tensor(values, at::kLong).to(device);
  return tensor;
}

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
