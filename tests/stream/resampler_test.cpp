// The streaming resampler against its direct form in double (any cutting into blocks, up and
// down, ratios near and far from 1), its response (a tone in the passband passes with unit gain
// and the stated delay, a tone past the lower Nyquist frequency is gone), and a round trip,
// which delays by a whole number of samples.

#include <grafx/stream/resampler.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

namespace grafx::dsp {
namespace {

constexpr double kPi = 3.14159265358979323846;

/// Streams x through a resampler in blocks of random sizes 1..max_block.
std::vector<float> stream(StreamResampler& resampler, const std::vector<float>& x,
                          int64_t max_block, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_int_distribution<int64_t> sizes(1, max_block);
  std::vector<float> y;
  for (size_t start = 0; start < x.size();) {
    const int64_t n = std::min<int64_t>(sizes(generator), int64_t(x.size() - start));
    std::vector<float> out(size_t(resampler.max_outputs(n)));
    const int64_t m = resampler.process(x.data() + start, n, out.data());
    EXPECT_LE(m, resampler.max_outputs(n));
    y.insert(y.end(), out.begin(), out.begin() + m);
    start += size_t(n);
  }
  return y;
}

std::vector<float> tone(double hz, double rate, int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = float(std::sin(2 * kPi * hz * double(i) / rate));
  return x;
}

TEST(StreamResampler, EqualsItsDirectFormInAnyBlocks) {
  std::mt19937 generator(3);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> x(6000);
  for (float& v : x) v = uniform(generator);
  const std::vector<double> xd(x.begin(), x.end());
  for (auto [from, to] : {std::pair<int64_t, int64_t>{48000, 30000},
                          {30000, 48000},
                          {44100, 16000},
                          {16000, 44100},
                          {48000, 16000},
                          {44100, 48000}}) {
    auto filter = std::make_shared<ResamplerFilter>(from, to);
    StreamResampler resampler(filter, from, to);
    const std::vector<double> expected = StreamResampler::convert(*filter, from, to, xd);
    for (int64_t block : {1, 7, 512}) {
      resampler.reset();
      const std::vector<float> y = stream(resampler, x, block, uint32_t(block));
      ASSERT_EQ(int64_t(y.size()), resampler.outputs_after(int64_t(x.size())));
      ASSERT_EQ(y.size(), expected.size());
      double error = 0;
      for (size_t i = 0; i < y.size(); ++i) error = std::max(error, std::abs(y[i] - expected[i]));
      EXPECT_LE(error, 2e-6) << from << " -> " << to << ", blocks up to " << block;
    }
  }
}

TEST(StreamResampler, PassesThePassbandAndStopsWhatTheLowerRateCannotHold) {
  for (auto [from, to] : {std::pair<int64_t, int64_t>{48000, 30000}, {30000, 44100}}) {
    auto filter        = std::make_shared<ResamplerFilter>(from, to);
    const double delay =  // of the output, in seconds
        double(filter->taps.size() - 1) / 2 / double(filter->common_rate);
    const int64_t n = from;                       // one second
    for (double hz : {100.0, 1000.0, 13000.0}) {  // up to 0.87 of 15 kHz
      StreamResampler resampler(filter, from, to);
      const std::vector<float> y = stream(resampler, tone(hz, double(from), n), 256, 1);
      double error               = 0;
      for (size_t i = size_t(to / 4); i < y.size() - size_t(to / 4); ++i)  // settled
        error = std::max(
            error, std::abs(y[i] - std::sin(2 * kPi * hz * (double(i) / double(to) - delay))));
      EXPECT_LE(error, 1e-3) << hz << " Hz, " << from << " -> " << to;
    }
    if (from < to) continue;  // a tone past the output's Nyquist frequency: -80 dB
    StreamResampler resampler(filter, from, to);
    const std::vector<float> y = stream(resampler, tone(16000, double(from), n), 256, 1);
    float peak                 = 0;
    for (size_t i = size_t(to / 4); i < y.size(); ++i) peak = std::max(peak, std::abs(y[i]));
    EXPECT_LE(peak, 1e-4) << from << " -> " << to;
  }
}

TEST(StreamResampler, ARoundTripDelaysByAWholeNumberOfSamples) {
  const int64_t host = 44100, fit = 30000;
  auto filter        = std::make_shared<ResamplerFilter>(host, fit);
  const int64_t step = filter->common_rate / host;
  ASSERT_EQ((int64_t(filter->taps.size()) - 1) % step, 0);
  const int64_t delay = (int64_t(filter->taps.size()) - 1) / step;
  StreamResampler down(filter, host, fit), up(filter, fit, host);
  const std::vector<float> x = tone(3000, double(host), host);
  const std::vector<float> y = stream(up, stream(down, x, 300, 2), 300, 3);
  double error               = 0;
  for (size_t i = size_t(host / 4); i + 10 < y.size(); ++i)
    error = std::max(error, double(std::abs(y[i] - x[i - size_t(delay)])));
  EXPECT_LE(error, 2e-3);
}

TEST(StreamResampler, RefusesRatesItCannotConvert) {
  EXPECT_THROW(ResamplerFilter(0, 48000), std::invalid_argument);
  EXPECT_THROW(ResamplerFilter(9999991, 9999973), std::invalid_argument);  // primes: U ~ 1e14
  auto filter = std::make_shared<ResamplerFilter>(48000, 30000);
  EXPECT_THROW(StreamResampler(filter, 48000, 44100), std::invalid_argument);
}

}  // namespace
}  // namespace grafx::dsp
