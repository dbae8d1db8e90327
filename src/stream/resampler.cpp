#include <grafx/stream/resampler.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace grafx::dsp {
namespace {

constexpr double kPi              = 3.14159265358979323846;
constexpr double kAttenuationDb   = 90;   // from the lower Nyquist frequency on
constexpr double kTransitionRatio = 0.1;  // of the lower Nyquist frequency, below it
constexpr double kMaxCommonRate   = 4294967296.0;

/// The modified Bessel function I0 (its power series; converges for the window's arguments).
double bessel_i0(double x) {
  double sum = 1, term = 1;
  for (int k = 1; k < 200 && term > 1e-17 * sum; ++k) {
    term *= (x / (2 * k)) * (x / (2 * k));
    sum += term;
  }
  return sum;
}

/// Σ c[r]·x[r] over n terms in 8 running sums, which the compiler keeps in vector registers
/// (one sum would be a chain of dependent additions, 4–8 times slower).
float dot(const float* c, const float* x, int64_t n) {
  float sums[8] = {};
  int64_t r     = 0;
  for (; r + 8 <= n; r += 8)
    for (int j = 0; j < 8; ++j) sums[j] += c[r + j] * x[r + j];
  for (; r < n; ++r) sums[0] += c[r] * x[r];
  return ((sums[0] + sums[4]) + (sums[1] + sums[5])) + ((sums[2] + sums[6]) + (sums[3] + sums[7]));
}

// On x86-64, process() has a second copy of its loop for AVX2, taken where the processor has it:
// the eight sums in one vector instead of two, the same operations (no FMA), the same output.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GRAFX_RESAMPLER_AVX2 1
template <typename F>
__attribute__((target("avx2"), flatten)) void with_avx2(const F& f) {
  f();
}
#endif

}  // namespace

ResamplerFilter::ResamplerFilter(int64_t a, int64_t b) : rate_a(a), rate_b(b) {
  if (a < 1 || b < 1 || a > 10000000 || b > 10000000)
    throw std::invalid_argument("ResamplerFilter: rates of 1 Hz to 10 MHz, not " +
                                std::to_string(a) + " and " + std::to_string(b));
  const int64_t g = std::gcd(a, b);
  if (double(a) / double(g) * double(b) > kMaxCommonRate)
    throw std::invalid_argument("ResamplerFilter: " + std::to_string(a) + " and " +
                                std::to_string(b) + " Hz have no common rate below 2^32 Hz");
  common_rate        = a / g * b;
  const double u     = double(common_rate);
  const double low   = double(std::min(a, b));
  const double width = kTransitionRatio * low / 2;       // Hz, below the lower Nyquist frequency
  const double cut   = (low / 2 - width / 2) / u;        // cycles per sample of U, mid-transition
  const double beta  = 0.1102 * (kAttenuationDb - 8.7);  // Kaiser's formulas
  const double order = (kAttenuationDb - 7.95) / (2.285 * 2 * kPi * width / u);
  const int64_t step = common_rate / a;  // K − 1 a multiple of U/a: round trips of a whole
  const int64_t k    = (int64_t(std::ceil(order)) + step - 1) / step * step + 1;
  taps.resize(size_t(k));
  const double centre = double(k - 1) / 2;
  double sum          = 0;
  for (int64_t i = 0; i < k; ++i) {
    const double t    = double(i) - centre;
    const double ramp = centre > 0 ? t / centre : 0;
    const double sinc = t == 0 ? 1 : std::sin(2 * kPi * cut * t) / (2 * kPi * cut * t);
    taps[size_t(i)] = 2 * cut * sinc * bessel_i0(beta * std::sqrt(std::max(0.0, 1 - ramp * ramp))) /
                      bessel_i0(beta);
    sum += taps[size_t(i)];
  }
  for (double& tap : taps) tap /= sum;  // unit gain at DC
}

StreamResampler::StreamResampler(std::shared_ptr<const ResamplerFilter> filter, int64_t from,
                                 int64_t to) {
  if (!((from == filter->rate_a && to == filter->rate_b) ||
        (from == filter->rate_b && to == filter->rate_a)))
    throw std::invalid_argument("StreamResampler: a filter of other rates");
  up_             = filter->common_rate / from;  // L
  down_           = filter->common_rate / to;    // M
  const int64_t k = int64_t(filter->taps.size());
  taps_per_phase_ = (k + up_ - 1) / up_;
  phases_.assign(size_t(up_ * taps_per_phase_), 0.0f);
  for (int64_t p = 0; p < up_; ++p)  // reversed, to meet the history oldest first
    for (int64_t r = 0; r < taps_per_phase_ && p + r * up_ < k; ++r)
      phases_[size_t(p * taps_per_phase_ + taps_per_phase_ - 1 - r)] =
          float(double(up_) * filter->taps[size_t(p + r * up_)]);
  history_.assign(size_t(2 * taps_per_phase_), 0.0f);
#ifdef GRAFX_RESAMPLER_AVX2
  __builtin_cpu_init();
  avx2_ = __builtin_cpu_supports("avx2");
#endif
}

void StreamResampler::reset() noexcept {
  std::fill(history_.begin(), history_.end(), 0.0f);
  position_ = 0, phase_ = 0, wait_ = 1;
}

int64_t StreamResampler::process(const float* in, int64_t n, float* out) noexcept {
  int64_t count = 0;
  auto loop     = [&] {
    const int64_t t = taps_per_phase_;
    for (int64_t i = 0; i < n; ++i) {
      history_[size_t(position_)] = history_[size_t(position_ + t)] = in[i];
      position_ = position_ + 1 == t ? 0 : position_ + 1;
      for (--wait_; wait_ == 0; wait_ = (phase_ += down_) / up_, phase_ %= up_)
        out[count++] = dot(phases_.data() + phase_ * t, history_.data() + position_, t);
    }
  };
#ifdef GRAFX_RESAMPLER_AVX2
  if (avx2_) return with_avx2(loop), count;
#endif
  loop();
  return count;
}

std::vector<double> StreamResampler::convert(const ResamplerFilter& filter, int64_t from,
                                             int64_t to, const std::vector<double>& x) {
  const int64_t up = filter.common_rate / from, down = filter.common_rate / to;
  const int64_t k = int64_t(filter.taps.size());
  const int64_t n = x.empty() ? 0 : (int64_t(x.size()) * up - 1) / down + 1;
  std::vector<double> y(size_t(n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t j = i * down / up, p = i * down % up;
    for (int64_t r = 0; p + r * up < k && j - r >= 0; ++r)
      y[size_t(i)] += double(up) * filter.taps[size_t(p + r * up)] * x[size_t(j - r)];
  }
  return y;
}

}  // namespace grafx::dsp
