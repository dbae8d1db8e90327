// Exact linear convolution: every path against plain loops, gradients against a direct
// (conv1d) implementation, and the FFT size rule.

#include <grafx/dsp/convolution.h>

#include "support/gradient_check.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

namespace grafx::dsp {
namespace {

/// Full linear convolution by plain loops, in double; h broadcast over items and channels.
at::Tensor direct_full(const at::Tensor& x, const at::Tensor& h) {
  int64_t n = std::max(x.size(0), h.size(0)), c = std::max(x.size(1), h.size(1));
  int64_t length = x.size(2), taps = h.size(2);
  at::Tensor xd = x.to(at::kDouble).expand({n, c, length}).contiguous();
  at::Tensor hd = h.to(at::kDouble).expand({n, c, taps}).contiguous();
  at::Tensor y  = at::zeros({n, c, length + taps - 1}, at::kDouble);
  auto xa = xd.accessor<double, 3>(), ha = hd.accessor<double, 3>();
  auto ya = y.accessor<double, 3>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t t = 0; t < length; ++t)
        for (int64_t k = 0; k < taps; ++k) ya[i][ch][t + k] += ha[i][ch][k] * xa[i][ch][t];
  return y;
}

at::Tensor direct(const at::Tensor& x, const at::Tensor& h, ConvolutionMode mode) {
  at::Tensor full = direct_full(x, h);
  if (mode == ConvolutionMode::kFull) return full;
  return full.narrow(2, mode == ConvolutionMode::kZeroPhase ? h.size(2) / 2 : 0, x.size(2));
}

/// Direct convolution with autograd, through conv1d (a correlation, hence the flipped filter).
at::Tensor conv1d_reference(const at::Tensor& x, const at::Tensor& h, ConvolutionMode mode) {
  int64_t n = x.size(0), c = x.size(1), taps = h.size(2);
  at::Tensor weight = h.expand({n, c, taps}).reshape({n * c, 1, taps}).flip(-1);
  at::Tensor padded = at::constant_pad_nd(x.reshape({1, n * c, x.size(2)}), {taps - 1, taps - 1});
  at::Tensor full = at::conv1d(padded, weight, at::Tensor(), at::IntArrayRef{1}, at::IntArrayRef{0},
                               at::IntArrayRef{1}, n * c)
                        .view({n, c, -1});
  if (mode == ConvolutionMode::kFull) return full;
  return full.narrow(2, mode == ConvolutionMode::kZeroPhase ? taps / 2 : 0, x.size(2));
}

const ConvolutionMode kModes[] = {ConvolutionMode::kCausal, ConvolutionMode::kZeroPhase,
                                  ConvolutionMode::kFull};

TEST(FastFftSize, IsTheSmallestEvenFiveSmoothSizeAtLeastN) {
  auto even_five_smooth = [](int64_t m) {
    if (m % 2) return false;
    for (int64_t p : {2, 3, 5})
      while (m % p == 0) m /= p;
    return m == 1;
  };
  for (int64_t n = 1; n <= 3000; ++n) {
    int64_t size = fast_fft_size(n);
    ASSERT_GE(size, n);
    ASSERT_TRUE(even_five_smooth(size)) << size;
    for (int64_t m = n; m < size; ++m)
      ASSERT_FALSE(even_five_smooth(m)) << n << ": " << m << " < " << size;
  }
  EXPECT_EQ(fast_fft_size(133118), 135000);  // GRAFX pads 2^17 + 2047 − 1 to 133118 = 2·66559
  EXPECT_EQ(fast_fft_size(131072), 131072);
  EXPECT_THROW(fast_fft_size(0), c10::Error);
}

TEST(Convolution, EveryPathEqualsPlainLoops) {
  at::manual_seed(1);
  struct Shape {
    int64_t length, taps, h_items, h_channels;
  };
  // Odd and even lengths and filters, filters longer than signals, one-tap filters, broadcasting.
  for (Shape s : {Shape{1000, 2047, 3, 2}, Shape{1001, 64, 1, 2}, Shape{300, 1, 3, 1},
                  Shape{257, 256, 3, 1}, Shape{50, 300, 1, 1}, Shape{4000, 39, 3, 2}}) {
    at::Tensor x = at::randn({3, 2, s.length}, at::kDouble);
    at::Tensor h = at::randn({s.h_items, s.h_channels, s.taps}, at::kDouble);
    for (ConvolutionMode mode : kModes) {
      at::Tensor expected = direct(x, h, mode);
      SCOPED_TRACE("L " + std::to_string(s.length) + ", K " + std::to_string(s.taps) + ", mode " +
                   std::to_string(int(mode)));
      EXPECT_TRUE(at::allclose(fft_convolve(x, h, mode), expected, 1e-9, 1e-9));
      EXPECT_TRUE(at::allclose(convolve(x, h, mode), expected, 1e-9, 1e-9));
      EXPECT_TRUE(at::allclose(block_convolve(x, h, mode), expected, 1e-9, 1e-9));
      for (int64_t size :
           {fast_fft_size(s.taps), fast_fft_size(2 * s.taps + 7), fast_fft_size(5 * s.taps)})
        EXPECT_TRUE(at::allclose(block_convolve(x, h, mode, size), expected, 1e-9, 1e-9))
            << "blocks of " << size;
    }
  }
}

TEST(Convolution, Float32IsAccurate) {
  at::manual_seed(2);
  at::Tensor x = at::randn({2, 2, 5000}), h = at::randn({2, 1, 2047}) * 0.02;
  at::Tensor expected = direct(x, h, ConvolutionMode::kZeroPhase);
  for (const at::Tensor& y : {fft_convolve(x, h, ConvolutionMode::kZeroPhase),
                              block_convolve(x, h, ConvolutionMode::kZeroPhase)}) {
    EXPECT_EQ(y.scalar_type(), at::kFloat);
    EXPECT_LT((y.to(at::kDouble) - expected).abs().max().item<double>(), 1e-5);
  }
}

TEST(Convolution, GradientsEqualThoseOfDirectConvolution) {
  at::manual_seed(3);
  // A filter shared by the channels, and one per row (whole signals then go in row groups,
  // here a full group and a partial one).
  for (int64_t h_channels : {1, 2}) {
    SCOPED_TRACE("filter channels " + std::to_string(h_channels));
    at::Tensor x       = at::randn({3, 2, 700}, at::kDouble),
               h       = at::randn({3, h_channels, 129}, at::kDouble);
    at::Tensor weights = at::randn({3, 2, 700}, at::kDouble);
    auto gradients = [&](const std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>& f) {
      at::Tensor xl = x.clone().requires_grad_(true), hl = h.clone().requires_grad_(true);
      (f(xl, hl) * weights).sum().backward();
      return std::make_pair(xl.grad(), hl.grad());
    };
    auto expected = gradients([](const at::Tensor& a, const at::Tensor& b) {
      return conv1d_reference(a, b, ConvolutionMode::kZeroPhase);
    });
    for (auto path : {fft_convolve, convolve}) {
      auto got = gradients([&](const at::Tensor& a, const at::Tensor& b) {
        return path(a, b, ConvolutionMode::kZeroPhase);
      });
      EXPECT_TRUE(at::allclose(got.first, expected.first, 1e-9, 1e-9));
      EXPECT_TRUE(at::allclose(got.second, expected.second, 1e-9, 1e-9));
    }
    auto blocks = gradients([](const at::Tensor& a, const at::Tensor& b) {
      return block_convolve(a, b, ConvolutionMode::kZeroPhase, 256);
    });
    EXPECT_TRUE(at::allclose(blocks.first, expected.first, 1e-9, 1e-9));
    EXPECT_TRUE(at::allclose(blocks.second, expected.second, 1e-9, 1e-9));
  }
  testing::expect_gradients_match(
      [](const std::vector<at::Tensor>& in) {
        return block_convolve(in[0], in[1], ConvolutionMode::kCausal, 64);
      },
      {at::randn({1, 2, 300}, at::kDouble), at::randn({1, 2, 33}, at::kDouble)});
}

// The transforms split rows across threads (ATen's CPU FFT runs a batch on one thread): each row
// is the same transform whichever thread runs it, so outputs and gradients are bit for bit
// those of one thread.
TEST(Convolution, ThreadsSplitTheRowsWithoutChangingABit) {
  const int before = at::get_num_threads();
  at::manual_seed(5);
  at::Tensor x = at::randn({3, 2, 5000}), h = at::randn({3, 2, 301}), w = at::randn({3, 2, 5000});
  auto run = [&](int threads) {
    at::set_num_threads(threads);
    std::vector<at::Tensor> results;
    for (int block : {0, 1024}) {
      at::Tensor xl = x.clone().requires_grad_(true), hl = h.clone().requires_grad_(true);
      at::Tensor y = block ? block_convolve(xl, hl, ConvolutionMode::kCausal, block)
                           : fft_convolve(xl, hl, ConvolutionMode::kZeroPhase);
      (y * w).sum().backward();
      results.insert(results.end(), {y.detach(), xl.grad(), hl.grad()});
    }
    return results;
  };
  const std::vector<at::Tensor> one = run(1), two = run(2);
  at::set_num_threads(before);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(at::equal(one[i], two[i])) << i;
}

TEST(Convolution, PlanPrefersBlocksForShortFiltersOnLongSignals) {
  ConvolutionPlan eq = plan_convolution(1 << 17, 2047, ConvolutionMode::kZeroPhase);
  EXPECT_TRUE(eq.block);
  EXPECT_GE(eq.fft_size, 2 * 2047);
  EXPECT_GE(eq.n_blocks * (eq.fft_size - 2047 + 1), 1 << 17);
  ConvolutionPlan reverb = plan_convolution(1 << 17, 60000, ConvolutionMode::kCausal);
  EXPECT_FALSE(reverb.block);
  EXPECT_EQ(reverb.fft_size, fast_fft_size((1 << 17) + 60000 - 1));
  ConvolutionPlan long_filter = plan_convolution(50, 300, ConvolutionMode::kCausal);
  EXPECT_FALSE(long_filter.block);
  EXPECT_EQ(long_filter.fft_size, fast_fft_size(50 + 299));  // one block: outputs and history
}

TEST(Convolution, BackwardIsDifferentiableAgain) {
  // d/dh of the gradient with respect to x, against finite differences of that gradient: in
  // blocks with one filter for all, and whole signals with a filter per row (in item groups).
  at::manual_seed(4);
  at::Tensor x = at::randn({3, 2, 300}, at::kDouble), weights = at::randn({3, 2, 300}, at::kDouble);
  at::Tensor probe = at::randn({3, 2, 300}, at::kDouble);
  for (bool shared : {true, false}) {
    auto convolve_path = [&](const at::Tensor& a, const at::Tensor& b) {
      return shared ? block_convolve(a, b, ConvolutionMode::kZeroPhase, 64)
                    : fft_convolve(a, b, ConvolutionMode::kZeroPhase);
    };
    auto gradient_dot_probe = [&](const at::Tensor& h, bool create_graph) {
      at::Tensor xl   = x.clone().requires_grad_(true);
      at::Tensor loss = (convolve_path(xl, h) * weights).sum();
      return (torch::autograd::grad({loss}, {xl}, {}, true, create_graph)[0] * probe).sum();
    };
    at::Tensor h =
        at::randn(shared ? std::vector<int64_t>{1, 1, 21} : std::vector<int64_t>{3, 2, 21},
                  at::kDouble)
            .requires_grad_(true);
    at::Tensor second  = torch::autograd::grad({gradient_dot_probe(h, true)}, {h})[0];
    const int64_t item = h.size(0) - 1, channel = h.size(1) - 1;
    for (int64_t k : {0, 10, 20}) {
      at::Tensor plus = h.detach().clone(), minus = h.detach().clone();
      plus[item][channel][k] += 1e-6;
      minus[item][channel][k] -= 1e-6;
      double numeric =
          (gradient_dot_probe(plus, false) - gradient_dot_probe(minus, false)).item<double>() /
          2e-6;
      EXPECT_NEAR(second[item][channel][k].item<double>(), numeric, 1e-6 * (1 + std::abs(numeric)))
          << (shared ? "one filter" : "a filter per row") << ", tap " << k;
    }
  }
}

TEST(Convolution, RejectsMismatchedArguments) {
  at::Tensor x = at::randn({2, 2, 100});
  EXPECT_THROW(convolve(x, at::randn({3, 1, 10})), c10::Error);  // 3 items for 2
  EXPECT_THROW(convolve(x, at::randn({2, 3, 10})), c10::Error);  // 3 channels for 2
  EXPECT_THROW(convolve(x, at::randn({2, 1, 10}, at::kDouble)), c10::Error);
  EXPECT_THROW(convolve(x.view({4, 100}), at::randn({2, 1, 10})), c10::Error);
  EXPECT_THROW(block_convolve(x, at::randn({2, 1, 10}), ConvolutionMode::kCausal, 8), c10::Error);
}

}  // namespace
}  // namespace grafx::dsp
