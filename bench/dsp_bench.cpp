// DSP kernels side by side with the naive ATen paths, in one run:
//   1. FFT sizes: which transform lengths pocketfft (LibTorch's CPU FFT) computes fast;
//   2. convolution of 16 stereo signals of 2^17 samples with the EQ's 2047-tap zero-phase FIR
//      and with a 60000-tap (2 s at 30 kHz) reverb, against one full-length FFT convolution as
//      GRAFX computes it (zero-padded to L + K − 1 samples);
//   3. the compressor's envelope: the one-pole recursion against GRAFX's 16384-tap truncated
//      impulse response convolved by FFT;
//   4. the reverb's inverse STFT (its impulse responses from masked noise spectra): one Function
//      against the same composed of ATen operations and against at::istft;
//   5. a dry/wet mix: at::lerp differentiated by autograd against dsp::dry_wet;
//   6. IIR filters: a cascade of 10 biquads per row run exactly (also on one stereo item, as
//      a master bus), against GRAFX's default 4000-tap frequency sampling, against autograd
//      through a per-sample loop, and with coefficients per sample (automated gains);
//   7. streamed convolution of a multitap delay's sparse response, against the same response
//      made dense (its zeros replaced by a floor far below float32's resolution of it);
//   8. streamed convolutions of an EQ and a reverb planned for calls of 64 or 512 samples,
//      called in blocks of either size.
// Float32, forward and forward+backward (gradients for the signals and the filters).

#include <grafx/dsp/biquad.h>
#include <grafx/dsp/convolution.h>
#include <grafx/dsp/recursion.h>
#include <grafx/dsp/signal.h>
#include <grafx/program.h>
#include <grafx/stream/convolution.h>

#include "bench_support.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
#include <random>

namespace grafx::bench {
namespace {

using dsp::ConvolutionMode;
constexpr int64_t kItems = 16, kLength = int64_t(1) << 17;

/// FFT convolution composed of ATen operations (differentiated by autograd), zero-padded to
/// `size` ≥ L + K − 1. GRAFX pads to exactly L + K − 1 (its irfft has no length argument: for an
/// odd size it returns one sample less on a warped grid; the exact length is used here, which
/// costs the same).
at::Tensor aten_convolve(const at::Tensor& x, const at::Tensor& h, ConvolutionMode mode,
                         int64_t size) {
  at::Tensor y = at::fft_irfft(at::fft_rfft(x, size, -1) * at::fft_rfft(h, size, -1), size, -1);
  return y.narrow(-1, mode == ConvolutionMode::kZeroPhase ? h.size(-1) / 2 : 0, x.size(-1));
}

struct Timings {
  double forward_ms, backward_ms;
};

/// Median forward and forward+backward times of y = f(inputs), loss Σ y·w.
Timings time_forward_backward(const std::function<at::Tensor(const std::vector<at::Tensor>&)>& f,
                              const std::vector<at::Tensor>& inputs) {
  std::vector<at::Tensor> leaves;
  for (const auto& x : inputs) leaves.push_back(x.detach().requires_grad_(true));
  at::Tensor weights = at::randn_like(f(inputs));
  double forward     = time_it([&] {
                     c10::NoGradGuard no_grad;
                     f(inputs);
                   }).median_ms;
  double backward    = time_it([&] {
                      for (auto& x : leaves) x.mutable_grad() = at::Tensor();
                      (f(leaves) * weights).sum().backward();
                    }).median_ms;
  return {forward, backward};
}

void fft_sizes() {
  std::cout << "\n### FFT sizes: rfft + irfft of 32 rows (float32)\n\n";
  auto next = [](int64_t n, std::initializer_list<int64_t> primes, bool even) {
    for (int64_t m = n;; ++m) {
      if (even && m % 2) continue;
      int64_t r = m;
      for (int64_t p : primes)
        while (r % p == 0) r /= p;
      if (r == 1) return m;
    }
  };
  Table table(
      {"needed length", "exact", "power of 2", "7-smooth", "5-smooth", "even 5-smooth (ours)"});
  for (int64_t n : {kLength + 2047 - 1, kLength + 16384 - 1, kLength + 60000 - 1, int64_t(8190),
                    int64_t(24573)}) {
    std::vector<std::string> row{std::to_string(n)};
    for (int64_t size : {n, next(n, {2}, true), next(n, {2, 3, 5, 7}, false),
                         next(n, {2, 3, 5}, false), dsp::fast_fft_size(n)}) {
      at::Tensor x = at::randn({32, size});
      double ms    = time_it([&] { at::fft_irfft(at::fft_rfft(x, size, -1), size, -1); }).median_ms;
      row.push_back(std::to_string(size) + ": " + fixed(ms, 1) + " ms");
    }
    table.add_row(row);
  }
  table.print(std::cout);
}

void convolution(const std::string& title, int64_t taps, int64_t filter_channels,
                 ConvolutionMode mode) {
  std::cout << "\n### " << title << "\n\n";
  at::manual_seed(0);
  at::Tensor x = at::randn({kItems, 2, kLength}),
             h = at::randn({kItems, filter_channels, taps}) * 0.01;
  Table table({"method", "transform size", "forward ms", "forward+backward ms", "speed-up (f+b)"});
  int64_t exact = kLength + taps - 1, fast = dsp::fast_fft_size(exact);
  Timings naive = time_forward_backward(
      [&](const auto& in) { return aten_convolve(in[0], in[1], mode, exact); }, {x, h});
  auto add = [&](const std::string& name, const std::string& size, Timings t) {
    table.add_row({name, size, fixed(t.forward_ms, 1), fixed(t.backward_ms, 1),
                   fixed(naive.backward_ms / t.backward_ms, 2) + "×"});
  };
  add("naive: ATen FFT of L + K − 1 (GRAFX)", std::to_string(exact), naive);
  add("ATen FFT of a fast size", std::to_string(fast),
      time_forward_backward([&](const auto& in) { return aten_convolve(in[0], in[1], mode, fast); },
                            {x, h}));
  add("fft_convolve: one block of a fast size (hand-written adjoint)", std::to_string(fast),
      time_forward_backward([&](const auto& in) { return dsp::fft_convolve(in[0], in[1], mode); },
                            {x, h}));
  for (int64_t size : {int64_t(4096), int64_t(8192), int64_t(16384), int64_t(32768), int64_t(65536),
                       int64_t(131072)}) {
    if (size < 2 * taps) continue;
    add("block_convolve",
        std::to_string(size) + " × " + std::to_string((kLength + size - taps) / (size - taps + 1)),
        time_forward_backward(
            [&](const auto& in) { return dsp::block_convolve(in[0], in[1], mode, size); }, {x, h}));
  }
  dsp::ConvolutionPlan plan = dsp::plan_convolution(kLength, taps, mode);
  add("**convolve (planned)**",
      plan.block ? std::to_string(plan.fft_size) + " × " + std::to_string(plan.n_blocks)
                 : std::to_string(plan.fft_size),
      time_forward_backward([&](const auto& in) { return dsp::convolve(in[0], in[1], mode); },
                            {x, h}));
  table.print(std::cout);
}

void envelope() {
  std::cout << "\n### Compressor envelope: 16 × 2^17 samples (float32)\n\n";
  constexpr int64_t kFirLength = 16384;
  at::manual_seed(0);
  at::Tensor energy = at::randn({kItems, 1, kLength}).pow(2), z = at::randn({kItems, 1}) + 3;
  // GRAFX: α = min(σ(z), 1 − 1e−5), h[n] = (1 − α)·α^n for n < 16384, causal FFT convolution, ReLU.
  auto truncated_fir = [&](const std::vector<at::Tensor>& in) {
    at::Tensor alpha = in[1].sigmoid().clamp_max(1 - 1e-5);
    at::Tensor n     = at::arange(kFirLength, alpha.options());
    at::Tensor h     = (1 - alpha).unsqueeze(-1) * (n * alpha.log().unsqueeze(-1)).exp();
    return aten_convolve(in[0], h, ConvolutionMode::kCausal, kLength + kFirLength - 1).relu();
  };
  auto recursion = [](const std::vector<at::Tensor>& in) {
    return dsp::one_pole(in[0], in[1].sigmoid().clamp_max(1 - 1e-5));
  };
  auto attack_release = [](const std::vector<at::Tensor>& in) {
    at::Tensor alpha = in[1].sigmoid().clamp_max(1 - 1e-5);
    return dsp::ballistics(in[0], alpha, alpha.sqrt(), at::zeros_like(alpha));
  };
  Table table(
      {"method", "forward ms", "forward+backward ms", "speed-up (forward)", "speed-up (f+b)"});
  Timings naive = time_forward_backward(truncated_fir, {energy, z});
  auto add      = [&](const std::string& name, Timings t) {
    table.add_row({name, fixed(t.forward_ms, 2), fixed(t.backward_ms, 2),
                   fixed(naive.forward_ms / t.forward_ms, 1) + "×",
                   fixed(naive.backward_ms / t.backward_ms, 1) + "×"});
  };
  add("naive: 16384-tap FIR by FFT (GRAFX)", naive);
  add("**one_pole recursion**", time_forward_backward(recursion, {energy, z}));
  add("ballistics recursion (attack/release)", time_forward_backward(attack_release, {energy, z}));
  table.print(std::cout);
}

void inverse_stft() {
  std::cout
      << "\n### Inverse STFT: 8×2 responses of 2 s at 30 kHz, 313 frames of 384 (float32)\n\n";
  constexpr int64_t kN = 384, kHop = 192, kLength = 60000;
  at::manual_seed(0);
  const at::Tensor spectra = at::randn({8, 2, 313, kN / 2 + 1}, at::kComplexFloat);
  const at::Tensor window  = at::hann_window(kN, true, at::kFloat);
  auto aten                = [&](const std::vector<at::Tensor>& in) {
    return at::istft(in[0].reshape({16, 313, kN / 2 + 1}).transpose(1, 2), kN, kHop, kN, window,
                                    true, false, true, kLength, false);
  };
  auto composed = [&](const std::vector<at::Tensor>& in) {
    return dsp::composed_inverse_stft(in[0], window, kHop, kLength);
  };
  auto fused = [&](const std::vector<at::Tensor>& in) {
    return dsp::inverse_stft(in[0], window, kHop, kLength);
  };
  Table table(
      {"method", "forward ms", "forward+backward ms", "speed-up (forward)", "speed-up (f+b)"});
  const Timings reference = time_forward_backward(composed, {spectra});
  auto add                = [&](const std::string& name, Timings t) {
    table.add_row({name, fixed(t.forward_ms, 2), fixed(t.backward_ms, 2),
                   fixed(reference.forward_ms / t.forward_ms, 2) + "×",
                   fixed(reference.backward_ms / t.backward_ms, 2) + "×"});
  };
  add("at::istft (ATen)", time_forward_backward(aten, {spectra}));
  add("composed of ATen operations", reference);
  add("**inverse_stft (one Function)**", time_forward_backward(fused, {spectra}));
  table.print(std::cout);
}

void dry_wet() {
  std::cout << "\n### Dry/wet mix: 8×2×114000 samples, a wet amount per item (float32)\n\n";
  at::manual_seed(0);
  const at::Tensor dry = at::randn({8, 2, 114000}), processed = at::randn_like(dry),
                   wet = at::rand({8, 1, 1});
  Table table({"method", "forward ms", "forward+backward ms", "speed-up (f+b)"});
  auto lerp = [](const std::vector<at::Tensor>& in) { return at::lerp(in[0], in[1], in[2]); };
  auto ours = [](const std::vector<at::Tensor>& in) { return dsp::dry_wet(in[0], in[1], in[2]); };
  const Timings reference = time_forward_backward(lerp, {dry, processed, wet});
  auto add                = [&](const std::string& name, Timings t) {
    table.add_row({name, fixed(t.forward_ms, 2), fixed(t.backward_ms, 2),
                   fixed(reference.backward_ms / t.backward_ms, 2) + "×"});
  };
  add("at::lerp, differentiated by autograd", reference);
  add("**dry_wet (one-pass backward)**", time_forward_backward(ours, {dry, processed, wet}));
  table.print(std::cout);
}

/// The cascade by a loop over samples of ATen operations on all rows at once, differentiated
/// by autograd: what a direct port without a kernel computes.
at::Tensor per_sample_loop(const at::Tensor& x, const at::Tensor& b, const at::Tensor& a) {
  at::Tensor signal = x.reshape({-1, x.size(-1)});
  at::Tensor bs = b.reshape({signal.size(0), -1, 3}), as = a.reshape({signal.size(0), -1, 3});
  for (int64_t k = 0; k < bs.size(1); ++k) {
    at::Tensor a0 = as.select(1, k).select(1, 0);
    auto c        = [&](const at::Tensor& t, int i) { return t.select(1, k).select(1, i) / a0; };
    at::Tensor b0 = c(bs, 0), b1 = c(bs, 1), b2 = c(bs, 2), a1 = c(as, 1), a2 = c(as, 2);
    at::Tensor zero = at::zeros_like(b0), x1 = zero, x2 = zero, y1 = zero, y2 = zero;
    std::vector<at::Tensor> out;
    for (int64_t n = 0; n < signal.size(1); ++n) {
      at::Tensor in = signal.select(1, n);
      at::Tensor y  = b0 * in + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2;
      x2 = x1, x1 = in, y2 = y1, y1 = y;
      out.push_back(y);
    }
    signal = at::stack(out, 1);
  }
  return signal.view(x.sizes());
}

void biquads() {
  constexpr int64_t kSections = 10, kTaps = 4000, kLoopLength = 512;
  std::cout
      << "\n### IIR filters: 16×2×2^17 signals, a cascade of 10 biquads per row (float32)\n\n";
  at::manual_seed(0);
  // Peaking filters of random centre, Q and gain: one filter per row (16×2×10 sections).
  at::Tensor omega =
      at::exp(at::rand({kItems, 2, kSections}) * std::log(400.0)) * (2 * M_PI * 40 / 44100);
  auto [b, a]  = dsp::cookbook_biquad(dsp::CookbookShape::kPeaking, omega,
                                      at::rand({kItems, 2, kSections}) * 3 + 0.3,
                                      at::randn({kItems, 2, kSections}));
  at::Tensor x = at::randn({kItems, 2, kLength});
  Table table({"method", "forward ms", "forward+backward ms", "exact is faster by (f+b)"});
  Timings exact = time_forward_backward(
      [](const auto& in) { return dsp::biquad_cascade(in[0], in[1], in[2]); }, {x, b, a});
  auto add = [&](const std::string& name, Timings t) {
    table.add_row({name, fixed(t.forward_ms, 1), fixed(t.backward_ms, 1),
                   fixed(t.backward_ms / exact.backward_ms, 1) + "×"});
  };
  add("**exact recursion, hand-written adjoint**", exact);
  // One stereo item (a master bus): a group of two rows, whose lanes the kernel packs with a
  // second section; scaled to the 32 rows above (on one thread, as one group runs).
  Timings master =
      time_forward_backward([](const auto& in) { return dsp::biquad_cascade(in[0], in[1], in[2]); },
                            {x.narrow(0, 0, 1).contiguous(), b.narrow(0, 0, 1).contiguous(),
                             a.narrow(0, 0, 1).contiguous()});
  add("exact recursion on one stereo item (2 rows, one group, as a master bus), × 16",
      {master.forward_ms * kItems, master.backward_ms * kItems});
  // GRAFX's fsm backend: the response sampled at 2001 frequencies, irfft to 4000 taps, then an
  // FFT convolution zero-padded to L + K − 1.
  add("frequency sampling, 4000 taps, FFT of L + K − 1 (GRAFX's default)",
      time_forward_backward(
          [&](const auto& in) {
            at::Tensor w = at::arange(kTaps / 2 + 1, in[1].options()) * (2 * M_PI / kTaps);
            at::Tensor h = at::fft_irfft(dsp::biquad_response(in[1], in[2], w), kTaps, -1);
            return aten_convolve(in[0], h, ConvolutionMode::kCausal, kLength + kTaps - 1);
          },
          {x, b, a}));
  add("frequency sampling, 4000 taps, planned convolution (ours)",
      time_forward_backward(
          [](const auto& in) {
            return dsp::biquad_cascade_frequency_sampling(in[0], in[1], in[2], kTaps);
          },
          {x, b, a}));
  // Automated gains: every sample's sections designed from its gains (a ramp per band), then
  // the cascade with coefficients per sample; timed from the gains, design included.
  at::Tensor omega_q = omega.unsqueeze(-1), q = at::rand({kItems, 2, kSections, 1}) * 3 + 0.3;
  at::Tensor ramp = at::linspace(-1, 1, kLength).expand({kItems, 2, kSections, kLength});
  add("coefficients per sample (automated gains: design + time-varying cascade)",
      time_forward_backward(
          [&](const auto& in) {
            auto [b_t, a_t] = dsp::cookbook_biquad(dsp::CookbookShape::kPeaking, omega_q, q, in[1]);
            return dsp::biquad_cascade_time_varying(in[0], b_t, a_t);
          },
          {x, ramp.contiguous()}));
  {
    auto [b_t, a_t] = dsp::cookbook_biquad(dsp::CookbookShape::kPeaking, omega_q, q, ramp);
    add("coefficients per sample: the time-varying cascade alone",
        time_forward_backward(
            [](const auto& in) { return dsp::biquad_cascade_time_varying(in[0], in[1], in[2]); },
            {x, b_t, a_t}));
  }
  // The per-sample loop on 512 samples, scaled to 2^17 (its cost is linear in the length).
  at::Tensor short_x = x.narrow(2, 0, kLoopLength).contiguous();
  Timings loop       = time_forward_backward(
      [](const auto& in) { return per_sample_loop(in[0], in[1], in[2]); }, {short_x, b, a});
  const double scale = double(kLength) / kLoopLength;
  add("autograd through a per-sample loop (512 samples, × 256)",
      {loop.forward_ms * scale, loop.backward_ms * scale});
  table.print(std::cout);
  at::Tensor reference =
      per_sample_loop(short_x.to(at::kDouble), b.to(at::kDouble), a.to(at::kDouble));
  at::Tensor error = (dsp::biquad_cascade(short_x, b, a).to(at::kDouble) - reference).abs().max();
  std::cout << "\nmax |exact − loop| / max |loop| on the first 512 samples (float32 kernel, "
               "float64 loop): "
            << (error / reference.abs().max()).item<double>() << "\n";
}

/// A stereo multitap delay's response as the stream gets it (2 s at 48 kHz): per channel, a
/// coloured tap of 39 taps somewhere in each of 20 segments of 4,800; zeros elsewhere, or
/// `floor`.
std::vector<dsp::StreamConvolverMatrix::Path> delay_paths(float floor) {
  std::mt19937 generator(7);
  std::uniform_int_distribution<int64_t> place(0, 4800 - 39);
  std::normal_distribution<float> tap(0.0f, 0.3f);
  std::vector<dsp::StreamConvolverMatrix::Path> paths;
  for (int64_t c = 0; c < 2; ++c) {
    std::vector<float> h(96000, floor);
    for (int64_t s = 0; s < 20; ++s)
      for (int64_t k = 0, at = s * 4800 + place(generator); k < 39; ++k)
        h[size_t(at + k)] = tap(generator);
    paths.push_back({c, c, h});
  }
  return paths;
}

/// Nanoseconds per sample of streaming the stereo signal `in` (its `samples` left, then right)
/// through `matrix` from silence, in calls of `block` samples.
double stereo_ns_per_sample(dsp::StreamConvolverMatrix& matrix, int64_t block,
                            const std::vector<float>& in, int64_t samples,
                            std::vector<float>& out) {
  matrix.reset();
  const auto start = std::chrono::steady_clock::now();
  for (int64_t done = 0; done < samples; done += block) {
    const float* x[2] = {in.data() + done, in.data() + samples + done};
    float* y[2]       = {out.data() + done, out.data() + samples + done};
    matrix.process(x, y, std::min(block, samples - done));
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  return std::chrono::duration<double, std::nano>(elapsed).count() / double(samples);
}

/// `samples` of stereo white noise in [−1, 1], left then right.
std::vector<float> stereo_noise(int64_t samples) {
  std::vector<float> in(size_t(2 * samples));
  std::mt19937 generator(8);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float& v : in) v = uniform(generator);
  return in;
}

void stream_delay() {
  std::cout << "\n### Streamed convolution of a stereo delay's response (2 × 96,000 taps, 20 "
               "coloured taps of 39 each; 48 kHz, blocks of 512, one core)\n\n";
  constexpr int64_t kBlock = 512, kSeconds = 10, kSamples = kSeconds * 48000;
  const std::vector<float> in = stereo_noise(kSamples);
  std::vector<float> out(in.size());
  struct Case {
    std::string name;
    dsp::StreamConvolverMatrix matrix;
    double best_ns = 1e300;
  };
  std::vector<Case> cases;
  cases.push_back({"dense: zeros replaced by 1e-12", {2, 2, delay_paths(1e-12f), kBlock}});
  cases.push_back({"sparse: partitions of zeros skipped", {2, 2, delay_paths(0.0f), kBlock}});
  for (int round = 0; round < 3; ++round)  // alternating, the best of three
    for (Case& c : cases)
      c.best_ns = std::min(c.best_ns, stereo_ns_per_sample(c.matrix, kBlock, in, kSamples, out));
  Table table(
      {"response", "spectral products a sample (both paths)", "ns per stereo sample", "real time"});
  for (const Case& c : cases)
    table.add_row({c.name, std::to_string(c.matrix.partition_products()), fixed(c.best_ns, 1),
                   fixed(1e9 / 48000 / c.best_ns, 0) + "×"});
  table.print(std::cout);
}

/// A stereo EQ's and a reverb's responses, planned for calls of 64 or of 512 samples (a first
/// level of partitions of 512 from tap 0 on, recomputed in every call, where that is cheaper)
/// and called in blocks of either size.
void stream_calls() {
  std::cout << "\n### Streamed convolutions planned for the calls (48 kHz, one core): a stereo "
               "EQ (2 paths of 2,047 taps) and a reverb (2 × 2 paths of 46,000 taps decaying "
               "60 dB a second)\n\n";
  constexpr int64_t kSamples  = 4 * 48000;
  const std::vector<float> in = stereo_noise(kSamples);
  std::vector<float> out(in.size());
  std::mt19937 generator(9);
  std::normal_distribution<float> tap(0.0f, 0.1f);
  const auto taps = [&](int64_t n, double decay_samples) {
    std::vector<float> h(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k)
      h[size_t(k)] = tap(generator) * float(std::exp(-k / decay_samples));
    return h;
  };
  using Path                     = dsp::StreamConvolverMatrix::Path;
  const std::vector<Path> eq     = {{0, 0, taps(2047, 1e30)}, {1, 1, taps(2047, 1e30)}};
  const std::vector<Path> reverb = {{0, 0, taps(46000, 6950)},
                                    {0, 1, taps(46000, 6950)},
                                    {1, 0, taps(46000, 6950)},
                                    {1, 1, taps(46000, 6950)}};
  struct Case {
    std::string name;
    int64_t planned, calls;
    dsp::StreamConvolverMatrix matrix;
    double best_ns = 1e300;
  };
  std::vector<Case> cases;
  for (const auto& [name, paths] : {std::pair{"EQ", eq}, std::pair{"reverb", reverb}})
    for (const auto& [planned, calls] : {std::pair{64, 64}, {64, 512}, {512, 512}, {512, 64}})
      cases.push_back({name, planned, calls, {2, 2, paths, planned}});
  for (int round = 0; round < 3; ++round)  // alternating, the best of three
    for (Case& c : cases)
      c.best_ns = std::min(c.best_ns, stereo_ns_per_sample(c.matrix, c.calls, in, kSamples, out));
  Table table({"response", "planned for calls of", "called in blocks of",
               "spectral products a sample", "ns per stereo sample", "real time"});
  for (const Case& c : cases)
    table.add_row({c.name, std::to_string(c.planned), std::to_string(c.calls),
                   std::to_string(c.matrix.partition_products()), fixed(c.best_ns, 1),
                   fixed(1e9 / 48000 / c.best_ns, 0) + "×"});
  table.print(std::cout);
}

}  // namespace
}  // namespace grafx::bench

namespace {

int run(int argc, char** argv) {
  using namespace grafx::bench;
  using grafx::dsp::ConvolutionMode;
  const std::vector<std::pair<std::string, std::function<void()>>> sections{
      {"fft", fft_sizes},
      {"eq",
       [] {
         convolution("EQ: 16×2×2^17 signals, one 2047-tap zero-phase FIR per item (float32)", 2047,
                     1, ConvolutionMode::kZeroPhase);
       }},
      {"reverb",
       [] {
         convolution("Reverb: 16×2×2^17 signals, a 60000-tap FIR per channel (float32)", 60000, 2,
                     ConvolutionMode::kCausal);
       }},
      {"envelope", envelope},
      {"istft", inverse_stft},
      {"mix", dry_wet},
      {"biquad", biquads},
      {"stream", stream_delay},
      {"stream-calls", stream_calls},
  };
  std::vector<std::string> chosen(argv + 1, argv + argc);
  for (const auto& name : chosen) {
    bool known = false;
    for (const auto& section : sections) known = known || section.first == name;
    if (!known) {
      std::cerr << "usage: dsp_bench [SECTION...]  (sections: fft eq reverb envelope istft mix "
                   "biquad stream stream-calls; "
                   "default: all)\n";
      return name == "--help" || name == "-h" ? 0 : 2;
    }
  }
  setup_threads();
  std::cout << machine_description() << "\n";
  for (const auto& [name, run] : sections)
    if (chosen.empty() || std::find(chosen.begin(), chosen.end(), name) != chosen.end()) run();
  return 0;
}

}  // namespace

// Errors end the program as they end the grafx CLI: one line with a code, status 1.
int main(int argc, char** argv) {
  return grafx::run_program("dsp_bench", [&] { return run(argc, argv); });
}
