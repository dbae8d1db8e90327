#include <grafx/loss/mrstft_loss.h>

#include <grafx/error.h>
#include <grafx/processors/processor.h>

#include "loss/spectral.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace grafx {

namespace {
const char* const kWhat = "multi-resolution STFT loss";
}

struct MultiResolutionStftLoss::Constants {
  std::vector<detail::StftResolution> resolutions;
  std::vector<at::Tensor> windows;  // per resolution, [fft], float64 CPU
  ConstantCache cache;
};

MultiResolutionStftLoss::MultiResolutionStftLoss(MultiResolutionStftLossOptions options)
    : options_(std::move(options)), constants_(std::make_shared<Constants>()) {
  const auto& o = options_;
  if (o.hop_sizes.size() != o.fft_sizes.size() || o.window_sizes.size() != o.fft_sizes.size())
    throw LossError("grafx.loss.options",
                    std::string(kWhat) + ": expected as many hop and window sizes as FFT sizes (" +
                        std::to_string(o.fft_sizes.size()) + "), but got " +
                        std::to_string(o.hop_sizes.size()) + " and " +
                        std::to_string(o.window_sizes.size()));
  if (!(o.eps > 0))
    throw LossError(
        "grafx.loss.options",
        std::string(kWhat) + ": expected a positive eps, but got " + std::to_string(o.eps));
  for (size_t r = 0; r < o.fft_sizes.size(); ++r)
    constants_->resolutions.push_back({o.fft_sizes[r], o.hop_sizes[r], o.window_sizes[r]});
  detail::check_resolutions(constants_->resolutions, kWhat);
  for (const auto& resolution : constants_->resolutions)
    constants_->windows.push_back(detail::padded_hann_window(resolution));
}

at::Tensor MultiResolutionStftLoss::operator()(const at::Tensor& estimate,
                                               const at::Tensor& target) const {
  return terms(estimate, target).total;
}

MultiResolutionStftLossTerms MultiResolutionStftLoss::terms(const at::Tensor& estimate,
                                                            const at::Tensor& target) const {
  detail::check_signal_pair(estimate, target, kWhat);
  if (estimate.dim() < 1 || estimate.numel() == 0)
    throw LossError("grafx.loss.shape",
                    std::string(kWhat) + ": expected non-empty signals of shape ...×L, but got a " +
                        (estimate.dim() < 1 ? "scalar" : "signal without samples or rows"));
  const int64_t n_samples = estimate.size(-1);
  detail::check_length(
      n_samples, 0, *std::max_element(options_.fft_sizes.begin(), options_.fft_sizes.end()), kWhat);
  const int64_t n_rows = estimate.numel() / n_samples;
  at::Tensor rows = at::cat({estimate.reshape({-1, n_samples}), target.reshape({-1, n_samples})});
  std::vector<at::Tensor> convergence, log_distance;
  for (size_t r = 0; r < constants_->resolutions.size(); ++r) {
    at::Tensor window = constants_->cache.get(std::to_string(r), estimate.options(),
                                              [&] { return constants_->windows[r]; });
    at::Tensor magnitude =
        detail::stft_magnitude(rows, window, constants_->resolutions[r].hop_size, options_.eps);
    at::Tensor x = magnitude.narrow(0, 0, n_rows), y = magnitude.narrow(0, n_rows, n_rows);
    convergence.push_back(detail::spectral_convergence(x, y, {0, 1, 2}));
    log_distance.push_back(detail::log_magnitude_distance(x, y, {0, 1, 2}));
  }
  MultiResolutionStftLossTerms terms;
  terms.spectral_convergence = at::stack(convergence);
  terms.log_magnitude        = at::stack(log_distance);
  terms.total                = (terms.spectral_convergence + terms.log_magnitude).mean();
  return terms;
}

}  // namespace grafx
