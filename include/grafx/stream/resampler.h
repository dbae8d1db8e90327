#pragma once
/// Sample-rate conversion of streaming audio by a rational ratio, for plugins that run at the
/// rate their parameters were fitted at inside hosts that run at another (apps/lv2).
///
/// From rate `from` to rate `to` (g = gcd(from, to), L = to/g, M = from/g): the input is
/// upsampled by L (zeros between samples), low-pass filtered by one windowed-sinc filter h of K
/// taps at the common rate U = from·L = to·M, and every M-th sample kept. Output n is
///
///     y[n] = Σ_r h[p + r·L] · x[j − r],   j = ⌊n·M / L⌋, p = n·M mod L,
///
/// which needs inputs up to j only: process() returns each output as soon as its last input has
/// arrived, so the outputs do not depend on how the input is cut into calls. The filter is
/// symmetric: y follows the band-limited input (h's cutoff is 0.95 of the lower rate's Nyquist
/// frequency, 90 dB down from the lower Nyquist frequency on) delayed by (K − 1)/2 samples of U.
/// A conversion and its way back use the same filter, and K − 1 is a multiple of U/from, so
/// that the two together delay by a whole number of samples of `from`: (K − 1)/(U/from).
///
/// Plain C++ (no LibTorch); all memory is allocated by the constructor, so process() may run
/// on an audio thread.

#include <cstdint>
#include <memory>
#include <vector>

namespace grafx::dsp {

/// The filter of a conversion between two rates, either way: h at the common rate.
struct ResamplerFilter {
  int64_t rate_a = 0, rate_b = 0;
  int64_t common_rate = 0;   ///< U = lcm(rate_a, rate_b)
  std::vector<double> taps;  ///< K taps of unit gain at DC, K − 1 a multiple of U / rate_a
  /// Designs it (rates of 1 Hz to 10 MHz whose common rate is at most 2^32).
  ResamplerFilter(int64_t rate_a, int64_t rate_b);
};

class StreamResampler {
 public:
  /// One channel from `from` to `to` (one of the filter's rate pairs, either way round).
  StreamResampler(std::shared_ptr<const ResamplerFilter> filter, int64_t from, int64_t to);
  /// The outputs that n more inputs complete, into out (room for max_outputs(n)); returns how
  /// many. Allocates nothing, throws nothing.
  int64_t process(const float* in, int64_t n, float* out) noexcept;
  /// Back to silence (no input yet).
  void reset() noexcept;
  /// The most outputs n inputs can complete.
  int64_t max_outputs(int64_t n) const { return n * up_ / down_ + 1; }
  /// Outputs completed by the first n inputs after a reset: ⌊(n·L − 1) / M⌋ + 1 (0 for n = 0).
  int64_t outputs_after(int64_t n) const { return n <= 0 ? 0 : (n * up_ - 1) / down_ + 1; }

  /// The same conversion of a whole signal, computed directly in double: the reference of the
  /// tests (as many outputs as outputs_after(x.size())).
  static std::vector<double> convert(const ResamplerFilter& filter, int64_t from, int64_t to,
                                     const std::vector<double>& x);

 private:
  int64_t up_ = 1, down_ = 1, taps_per_phase_ = 0;
  std::vector<float> phases_;     // [L][taps_per_phase]: h[p + r·L], reversed in r
  std::vector<float> history_;    // the last taps_per_phase inputs, twice (contiguous windows)
  int64_t position_ = 0;          // where the next input goes in history_
  int64_t phase_ = 0, wait_ = 1;  // of the next output: p, and the inputs it still needs
  bool avx2_ = false;             // process() takes its copy compiled for AVX2
};

}  // namespace grafx::dsp
