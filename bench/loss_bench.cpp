// Mix-matching loss: grafx's batched four-channel STFT (L, R, M and S in one STFT per
// resolution, M's and S's spectra from L's and R's; once for the estimate and once for the
// target) against a naive path (one A-weighting and one STFT per signal, channel and
// resolution, with the same building blocks), forward and forward+backward, on stereo mixes at
// 30 kHz.
//
// Each time is the best of three alternating rounds' medians.
//
//   build/bin/loss_bench            (GRAFX_THREADS=n to set the thread count)

#include <grafx/dsp/convolution.h>
#include <grafx/loss/mix_loss.h>
#include <grafx/program.h>

#include "bench_support.h"
#include "loss/spectral.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

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
      auto filter = [&](const at::Tensor& c) {
        return dsp::convolve(c.view({1, 1, -1}), taps.view({1, 1, -1}),
                             dsp::ConvolutionMode::kZeroPhase)
            .view({1, -1});
      };
      at::Tensor l = filter(x[0]), r = filter(x[1]);
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

namespace {

int run(int argc, char** argv) {
  grafx::bench::parse_arguments(argc, argv, {});
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
      // Alternating rounds, best median of each: bursts of other work on the machine hit one
      // round, not one path.
      const int n_rounds = 3;
      bench::Timing forward[2], both[2];  // [naive, batched]
      for (int round = 0; round < n_rounds; ++round)
        for (int path = 0; path < 2; ++path) {
          auto loss = [&] {
            return path == 0 ? naive(estimate, target) : batched(estimate, target);
          };
          // item() waits for the device.
          bench::Timing f  = bench::time_it([&] {
            c10::NoGradGuard no_grad;
            loss().item<float>();
          });
          bench::Timing fb = bench::time_it([&] {
            estimate.mutable_grad() = at::Tensor();
            loss().backward();
            estimate.grad()[0][0][0].item<float>();
          });
          if (round == 0 || f.median_ms < forward[path].median_ms) forward[path] = f;
          if (round == 0 || fb.median_ms < both[path].median_ms) both[path] = fb;
        }
      for (int path = 0; path < 2; ++path)
        table.add_row({device.str(), std::to_string(n_samples),
                       path == 0 ? "naive: per channel and resolution" : "grafx: batched",
                       path == 0 ? "24" : "6", bench::fixed(forward[path].median_ms, 1),
                       bench::fixed(both[path].median_ms, 1),
                       bench::fixed(both[0].median_ms / both[path].median_ms, 2) + "×"});
    }
  }
  table.print(std::cout);
  return 0;
}

}  // namespace

// Errors end the program as they end the grafx CLI: one line with a code, status 1.
int main(int argc, char** argv) {
  return grafx::run_program("loss_bench", [&] { return run(argc, argv); });
}
