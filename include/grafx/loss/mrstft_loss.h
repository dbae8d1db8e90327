#pragma once
/// Multi-resolution STFT loss with auraloss's defaults (`auraloss.freq.MultiResolutionSTFTLoss()`,
/// after Yamamoto et al. 2019): spectral convergence plus log-magnitude L1, linear frequency.
///
/// Every signal of an estimate x and a target y (any shape `...×L`, flattened to rows) is
/// transformed at each resolution r, X_r = max(|STFT_r(x)|, √eps) (rows × frames × bins):
///
///   loss = 1/R Σ_r ( ‖Y_r − X_r‖_F / ‖Y_r‖_F  +  mean |log Y_r − log X_r| )
///
/// As in auraloss, the norms and the mean run over all rows at once (the batch is pooled: the
/// spectral convergence of a batch is not the mean of its items'). STFT_r: periodic Hann window
/// of window_sizes[r] samples centred in frames of fft_sizes[r], hop hop_sizes[r], centred
/// frames (reflect padding of fft/2). Defaults: FFT 1024/2048/512, hop 120/240/50, window
/// 600/1200/240, eps 1e-8.
///
/// Inputs: estimate and target of the same shape, float32 or float64, on one device, with at
/// least as many samples as the largest FFT size.
///
///   grafx::MultiResolutionStftLoss loss;
///   at::Tensor value = loss(estimate, target);  // scalar, differentiable

#include <ATen/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace grafx {

struct MultiResolutionStftLossOptions {
  std::vector<int64_t> fft_sizes    = {1024, 2048, 512};
  std::vector<int64_t> hop_sizes    = {120, 240, 50};
  std::vector<int64_t> window_sizes = {600, 1200, 240};

  double eps = 1e-8;  ///< floor of the squared STFT magnitude
};

/// The loss and its parts per resolution.
struct MultiResolutionStftLossTerms {
  at::Tensor total;                 ///< scalar, the loss
  at::Tensor spectral_convergence;  ///< [resolutions]
  at::Tensor log_magnitude;         ///< [resolutions]
};

class MultiResolutionStftLoss {
 public:
  /// Throws LossError [grafx.loss.options] for lists of different lengths, an empty list, a
  /// window longer than its FFT, a hop < 1 or a non-positive eps.
  explicit MultiResolutionStftLoss(MultiResolutionStftLossOptions options = {});

  /// The scalar loss. Throws LossError [grafx.loss.shape], [grafx.loss.dtype] or
  /// [grafx.loss.too_short] for bad inputs.
  at::Tensor operator()(const at::Tensor& estimate, const at::Tensor& target) const;
  MultiResolutionStftLossTerms terms(const at::Tensor& estimate, const at::Tensor& target) const;

  const MultiResolutionStftLossOptions& options() const { return options_; }

 private:
  struct Constants;
  MultiResolutionStftLossOptions options_;
  std::shared_ptr<Constants> constants_;  // windows per device and dtype; shared by copies
};

}  // namespace grafx
