#pragma once
/// Vocabulary shared by every layer that handles tensors: named tensors, cached constants and
/// the type of sample rates.
///
///   TensorDict parameters{{"log_gain", at::zeros({4, 2})}};
///   at::Tensor window = cache.get("window", x.options(), [] { return at::hann_window(512); });

#include <ATen/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace grafx {

/// Named tensors, ordered by name.
using TensorDict = std::map<std::string, at::Tensor>;

/// Samples per second (Hz). Audio files store whole numbers, and so does every sample rate in
/// grafx: processors, losses, fits and files agree on one type.
using SampleRate = int64_t;

/// Caches constant tensors per (device, dtype) for one owner (a processor instance, a loss);
/// thread-safe.
class ConstantCache {
 public:
  /// Returns the cached tensor for `options`' device and dtype, building it with `make` (on the
  /// CPU in float64, say) the first time and converting it to `options`.
  at::Tensor get(const std::string& key, const at::TensorOptions& options,
                 const std::function<at::Tensor()>& make) const;

 private:
  mutable std::mutex mutex_;
  mutable std::map<std::string, at::Tensor> tensors_;
};

/// `values` as a tensor of int64 on `device`: on the CPU made anew, elsewhere made once per
/// content and device and kept for the process, so that work which indexes with host-made
/// lists copies nothing to the device after its first run (what a captured CUDA graph needs:
/// the tensors it reads must stay where they were).
at::Tensor device_index(const std::vector<int64_t>& values, const at::Device& device);

/// Whether each row of `x` holds a NaN or an infinity: a bool tensor of x's first `kept`
/// dimensions (a scalar for kept = 0), the rest reduced. Each row's sum first (one pass, no
/// temporaries): where every sum is finite, so is every value. Only where a sum is not (NaN, ±∞,
/// or finite values that overflow it) is x scanned, in slices of the last dimension, so that the
/// temporaries stay small however long x is (isfinite on a whole song at once allocates several
/// bytes per sample).
at::Tensor non_finite_rows(const at::Tensor& x, int64_t kept);
/// Whether every value of `x` is finite (in small slices, as non_finite_rows).
bool all_finite(const at::Tensor& x);

}  // namespace grafx
