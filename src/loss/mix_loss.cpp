#include <grafx/loss/mix_loss.h>

#include <grafx/dsp/convolution.h>
#include <grafx/error.h>
#include <grafx/processors/processor.h>

#include "loss/spectral.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <sstream>

namespace grafx {

namespace {

const char* const kWhat = "mix loss";

void check_options(const MixLossOptions& o) {
  auto fail = [](const std::string& message) {
    throw LossError("grafx.loss.options", std::string(kWhat) + ": " + message);
  };
  if (!(o.sample_rate > 0))
    fail("expected a positive sample rate, but got " + std::to_string(o.sample_rate));
  if (o.n_mels < 1) fail("expected at least one mel band, but got " + std::to_string(o.n_mels));
  if (!(o.eps > 0)) fail("expected a positive eps, but got " + std::to_string(o.eps));
  if (o.skip_samples < 0)
    fail("expected skip_samples >= 0, but got " + std::to_string(o.skip_samples));
  if (!(o.lr_weight >= 0 && o.mid_weight >= 0 && o.side_weight >= 0))
    fail("expected non-negative channel weights, but got " + std::to_string(o.lr_weight) + ", " +
         std::to_string(o.mid_weight) + ", " + std::to_string(o.side_weight));
}

}  // namespace

struct MixLoss::Constants {
  std::vector<detail::StftResolution> resolutions;
  std::vector<at::Tensor> windows;      // per resolution, [fft], float64 CPU
  std::vector<at::Tensor> filterbanks;  // per resolution, sparse [n_mels, fft/2+1]
  at::Tensor a_weighting;               // [101]
  ConstantCache cache;                  // the above on each device and dtype in use
};

MixLoss::MixLoss(MixLossOptions options)
    : options_(std::move(options)), constants_(std::make_shared<Constants>()) {
  check_options(options_);
  for (int64_t fft_size : options_.fft_sizes)
    constants_->resolutions.push_back({fft_size, fft_size / 4, fft_size});
  detail::check_resolutions(constants_->resolutions, kWhat);
  for (const auto& resolution : constants_->resolutions) {
    at::Tensor filterbank =
        detail::mel_filterbank(options_.sample_rate, resolution.fft_size, options_.n_mels);
    // An empty band has a zero mel magnitude, whose log would make the loss NaN.
    at::Tensor empty = (filterbank.amax(1) == 0).nonzero();
    if (empty.numel() > 0) {
      std::ostringstream s;
      s << kWhat << ": expected every one of the " << options_.n_mels
        << " mel bands to hold an FFT bin, but band " << empty[0].item<int64_t>()
        << " holds none at FFT size " << resolution.fft_size
        << " (use fewer mel bands or larger FFT sizes)";
      throw LossError("grafx.loss.options", s.str());
    }
    constants_->windows.push_back(detail::padded_hann_window(resolution));
    constants_->filterbanks.push_back(filterbank.to_sparse());
  }
  if (options_.a_weighting) constants_->a_weighting = detail::a_weighting_fir(options_.sample_rate);
}

at::Tensor MixLoss::operator()(const at::Tensor& estimate, const at::Tensor& target) const {
  return terms(estimate, target).total;
}

MixLossTerms MixLoss::terms(const at::Tensor& estimate, const at::Tensor& target) const {
  detail::check_signal_pair(estimate, target, kWhat);
  const bool stereo = (estimate.dim() == 2 || estimate.dim() == 3) && estimate.size(-2) == 2;
  if (!stereo || estimate.numel() == 0) {
    std::ostringstream s;
    s << kWhat << ": expected stereo signals of shape B×2×L or 2×L (B >= 1), but got "
      << estimate.sizes();
    throw LossError("grafx.loss.shape", s.str());
  }
  const int64_t n_samples = estimate.size(-1), skip = options_.skip_samples;
  detail::check_length(n_samples, skip,
                       *std::max_element(options_.fft_sizes.begin(), options_.fft_sizes.end()),
                       kWhat);
  const int64_t length  = n_samples - skip;
  const int64_t n_items = estimate.numel() / (2 * n_samples);

  auto crop = [&](const at::Tensor& x) {
    return x.reshape({-1, 2, n_samples}).narrow(2, skip, length);
  };
  // Two calls rather than one on the concatenation: the backward pass then runs over the
  // estimate's rows only (a target without gradient records no graph).
  std::vector<at::Tensor> x_mels = mel_spectrograms(crop(estimate)),
                          y_mels = mel_spectrograms(crop(target));
  std::vector<at::Tensor> convergence, log_distance;  // per resolution, B×4
  for (size_t r = 0; r < x_mels.size(); ++r) {
    convergence.push_back(
        detail::spectral_convergence(x_mels[r], y_mels[r], {1, 2}).view({n_items, 4}));
    log_distance.push_back(
        detail::log_magnitude_distance(x_mels[r], y_mels[r], {1, 2}).view({n_items, 4}));
  }
  at::Tensor sc = at::stack(convergence), lm = at::stack(log_distance);  // R×B×4
  at::Tensor per_channel = (sc + lm).mean(0);                            // B×4: d_L, d_R, d_M, d_S
  at::Tensor lr = per_channel.narrow(1, 0, 2).mean(1), mid = per_channel.select(1, 2),
             side = per_channel.select(1, 3);
  MixLossTerms terms;
  terms.per_item =
      options_.lr_weight * lr + options_.mid_weight * mid + options_.side_weight * side;
  terms.total                = terms.per_item.mean();
  terms.lr                   = lr.mean();
  terms.mid                  = mid.mean();
  terms.side                 = side.mean();
  terms.spectral_convergence = sc.mean(1);
  terms.log_magnitude        = lm.mean(1);
  return terms;
}

std::vector<at::Tensor> MixLoss::mel_spectrograms(const at::Tensor& stereo) const {
  auto constant = [&](const std::string& key, const at::Tensor& value) {
    return constants_->cache.get(key, stereo.options(), [&] { return value; });
  };
  auto sparse_constant = [&](const std::string& key, const at::Tensor& value) {
    // ConstantCache holds dense tensors: cache the parts, assemble the sparse tensor per call.
    at::Tensor indices = constants_->cache.get(key + "/indices", stereo.options().dtype(at::kLong),
                                               [&] { return value.indices(); });
    return at::sparse_coo_tensor(indices, constant(key + "/values", value.values()), value.sizes());
  };
  // A-weighting is linear, so filtering L and R before forming M and S equals filtering all four
  // channels, at half the cost. Zero-phase mode: the linear-phase FIR's centre tap is lag 0.
  const int64_t length = stereo.size(2);
  at::Tensor x =
      options_.a_weighting
          ? dsp::convolve(stereo, constant("a_weighting", constants_->a_weighting).view({1, 1, -1}),
                          dsp::ConvolutionMode::kZeroPhase)
          : stereo;
  at::Tensor left = x.select(1, 0), right = x.select(1, 1);
  at::Tensor channels = at::stack({left, right, left + right, left - right}, 1).view({-1, length});
  std::vector<at::Tensor> mels;
  for (size_t r = 0; r < constants_->resolutions.size(); ++r) {
    const std::string key = std::to_string(r);
    at::Tensor magnitude =
        detail::stft_magnitude(channels, constant("window" + key, constants_->windows[r]),
                               constants_->resolutions[r].hop_size, options_.eps);
    mels.push_back(detail::apply_filterbank(
        magnitude, sparse_constant("mel" + key, constants_->filterbanks[r])));
  }
  return mels;
}

}  // namespace grafx
