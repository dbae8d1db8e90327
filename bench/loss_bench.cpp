// Mix-matching loss: grafx's batched four-channel STFT (L, R, M and S in one STFT per
// resolution, once for the estimate and once for the target) against a naive path (one
// A-weighting and one STFT per signal, channel and resolution, with the same building blocks),
// forward and forward+backward, on stereo mixes at 30 kHz.
//
//   build/bin/loss_bench            (GRAFX_THREADS=n to set the thread count)

#include <grafx/loss/mix_loss.h>

#include "bench_support.h"
#include "loss/spectral.h"

#include <ATen/ATen.h>

#include <iostream>

namespace grafx {
namespace {

// The same loss computed one channel, one signal and one resolution at a time.
struct NaiveMixLoss {
  MixLossOptions options;
  std::vector<detail::StftResolution> resolutions;
  std::vector<at::Tensor> windows, filterbanks;
  at::Tensor taps;

  NaiveMixLoss(const MixLossOptions& o, const at::TensorOptions& to) : options(o) {
    for (int64_t n : o.fft_sizes) {
      resolutions.push_back({n, n / 4, n});
      windows.push_back(detail::padded_hann_window(resolutions.back()).to(to));
      filterbanks.push_back(detail::mel_filterbank(o.sample_rate, n, o.n_mels).to_sparse().to(to));
    }
    taps = detail::a_weighting_fir(o.sample_rate).to(to);
  }

  at::Tensor operator()(const at::Tensor& estimate, const at::Tensor& target) const {
    auto channels = [&](const at::Tensor& x) {  // 2×L → L, R, M, S, each 1×L
      at::Tensor l = detail::fir_filter(x.narrow(0, 0, 1), taps),
                 r = detail::fir_filter(x.narrow(0, 1, 1), taps);
      return std::vector<at::Tensor>{l, r, l + r, l - r};
    };
    std::vector<at::Tensor> x = channels(estimate[0]), y = channels(target[0]);
    const double weights[4] = {options.lr_weight / 2, options.lr_weight / 2, options.mid_weight,
                               options.side_weight};
    at::Tensor total        = at::zeros({}, estimate.options());
    for (int c = 0; c < 4; ++c)
      for (size_t r = 0; r < resolutions.size(); ++r) {
        auto mel = [&](const at::Tensor& s) {
          return detail::apply_filterbank(
              detail::stft_magnitude(s, windows[r], resolutions[r].hop_size, options.eps),
              filterbanks[r]);
        };
        at::Tensor xm = mel(x[c]), ym = mel(y[c]);
        total = total + weights[c] / resolutions.size() *
                            (detail::spectral_convergence(xm, ym, {1, 2}) +
                             detail::log_magnitude_distance(xm, ym, {1, 2}))
                                .sum();
      }
    return total;
  }
};

}  // namespace
}  // namespace grafx

int main() {
  using namespace grafx;
  bench::setup_threads();
  std::cout << "Mix-matching loss, stereo float32 at 30 kHz, batch 1, FFT 512/1024/4096, 96 mels, "
               "A-weighting\n"
            << bench::machine_description() << "\n\n";
  std::vector<at::Device> devices = {at::kCPU};
  if (at::hasCUDA()) devices.push_back(at::Device(at::kCUDA));
  MixLoss batched;
  bench::Table table({"device", "samples", "path", "STFT calls", "forward ms",
                      "forward+backward ms", "speed-up (f+b)"});
  for (const at::Device& device : devices) {
    const at::TensorOptions options = at::TensorOptions().device(device).dtype(at::kFloat);
    NaiveMixLoss naive(batched.options(), options);
    for (int64_t n_samples : {84000, 114000}) {
      at::Tensor target   = at::randn({1, 2, n_samples}, options);
      at::Tensor estimate = 0.7 * target + 0.3 * at::randn({1, 2, n_samples}, options);
      estimate.requires_grad_(true);
      const double difference = std::abs(batched(estimate, target).item<double>() -
                                         naive(estimate, target).item<double>());
      if (difference > 1e-4) std::cerr << "paths disagree by " << difference << "\n";
      double reference = 0;
      for (bool is_naive : {true, false}) {
        auto loss = [&] { return is_naive ? naive(estimate, target) : batched(estimate, target); };
        // item() waits for the device.
        bench::Timing forward = bench::time_it([&] {
          at::NoGradGuard no_grad;
          loss().item<float>();
        });
        bench::Timing both    = bench::time_it([&] {
          estimate.mutable_grad() = at::Tensor();
          loss().backward();
          estimate.grad()[0][0][0].item<float>();
        });
        if (is_naive) reference = both.median_ms;
        table.add_row({device.str(), std::to_string(n_samples),
                       is_naive ? "naive: per channel and resolution" : "grafx: batched",
                       is_naive ? "24" : "6", bench::fixed(forward.median_ms, 1),
                       bench::fixed(both.median_ms, 1),
                       bench::fixed(reference / both.median_ms, 2) + "×"});
      }
    }
  }
  table.print(std::cout);
}
