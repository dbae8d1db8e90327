// The biquad cascade against an independent transposed-direct-form loop and the FFT of its
// analytic response, for every grouping of rows, sections and blocks; its hand-written adjoint
// against float64 finite differences, once and twice differentiated, and the recorded adjoint;
// GRAFX's frequency-sampling path against the exact one. The cascade with coefficients per sample
// against a plain per-sample loop, the fixed cascade, finite differences (once and twice) and
// central differences of its tangents.

#include <grafx/dsp/biquad.h>
#include <grafx/dsp/forward_mode.h>

#include "support/gradient_check.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

namespace grafx::dsp {
namespace {

using testing::expect_gradients_match;

double max_error(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

/// Random sections [..., K, 3] with poles of radius ≤ max_radius; a0 ≠ 1 (not normalised).
std::pair<at::Tensor, at::Tensor> random_sections(std::vector<int64_t> leading, int64_t n_sections,
                                                  double max_radius = 0.95) {
  leading.push_back(n_sections);
  at::Tensor radius = at::rand(leading, at::kDouble) * max_radius;
  at::Tensor angle  = at::rand(leading, at::kDouble) * M_PI;
  at::Tensor a0     = at::rand(leading, at::kDouble) + 0.5;
  at::Tensor a      = at::stack({a0, -2 * radius * at::cos(angle) * a0, radius.pow(2) * a0}, -1);
  leading.push_back(3);
  return {at::randn(leading, at::kDouble), a};
}

/// The gradients of Σ weights·f(inputs) with respect to every input, flattened and recorded
/// (create_graph): a function whose finite differences check the second derivatives.
testing::TensorFunction recorded_gradients(const testing::TensorFunction& f,
                                           const at::Tensor& weights) {
  return [f, weights](const std::vector<at::Tensor>& in) {
    std::vector<at::Tensor> leaves;
    for (const auto& t : in)
      leaves.push_back(t.requires_grad() ? t : t.detach().requires_grad_(true));
    auto gradients = torch::autograd::grad({(f(leaves) * weights).sum()}, leaves, {}, true, true);
    std::vector<at::Tensor> flat;
    for (const auto& g : gradients) flat.push_back(g.flatten());
    return at::cat(flat);
  };
}

TEST(BiquadCascade, EqualsTheDirectFormLoopInFloat64AndFloat32) {
  at::manual_seed(1);
  at::Tensor x  = at::randn({7, 2, 3000}, at::kDouble);  // 14 rows: the parallel groups
  auto [b, a]   = random_sections({7, 1}, 3);            // one filter per node, both channels
  at::Tensor y  = biquad_cascade(x, b, a);
  at::Tensor ex = reference::biquad_cascade(x, b, a);
  EXPECT_LT(max_error(y, ex), 1e-12 * ex.abs().max().item<double>());
  at::Tensor y32 = biquad_cascade(x.to(at::kFloat), b.to(at::kFloat), a.to(at::kFloat));
  EXPECT_EQ(y32.scalar_type(), at::kFloat);
  EXPECT_LT(max_error(y32, ex), 1e-4 * ex.abs().max().item<double>());
  // Reversed: filtering the time-reversed signal, reversed back.
  EXPECT_LT(max_error(biquad_cascade(x, b, a, true),
                      reference::biquad_cascade(x.flip(-1), b, a).flip(-1)),
            1e-12 * ex.abs().max().item<double>());
}

TEST(BiquadCascade, ImpulseResponseHasTheAnalyticSpectrum) {
  at::manual_seed(2);
  const int64_t length = 4096;
  auto [b, a]          = random_sections({2}, 4, 0.9);  // decays far below 1e-12 in 4096 samples
  at::Tensor impulse   = at::zeros({2, length}, at::kDouble);
  impulse.select(1, 0).fill_(1.0);
  at::Tensor measured = at::fft_rfft(biquad_cascade(impulse, b, a), length, -1);
  at::Tensor omega    = at::arange(length / 2 + 1, at::kDouble) * (2 * M_PI / length);
  // H(e^{jω}) = Π_k B_k/A_k, written out separately from biquad_response.
  at::Tensor z1 = at::polar(at::ones_like(omega), -omega), z2 = z1 * z1;
  at::Tensor expected = at::ones({2, length / 2 + 1}, at::kComplexDouble);
  for (int64_t k = 0; k < 4; ++k) {
    auto c   = [&](const at::Tensor& t, int i) { return t.select(1, k).select(1, i).unsqueeze(1); };
    expected = expected * (c(b, 0) + c(b, 1) * z1 + c(b, 2) * z2) /
               (c(a, 0) + c(a, 1) * z1 + c(a, 2) * z2);
  }
  EXPECT_LT((measured - expected).abs().max().item<double>(), 1e-10);
  EXPECT_LT((biquad_response(b, a, omega) - expected).abs().max().item<double>(), 1e-12);
  at::Tensor expected_db = 20 * expected.abs().log10();
  EXPECT_LT((biquad_magnitude_db(b, a, omega) - expected_db).abs().max().item<double>(), 1e-9);
}

TEST(BiquadCascade, GradientsMatchFiniteDifferencesInBothDirections) {
  at::manual_seed(3);
  at::Tensor x = at::randn({3, 2, 200}, at::kDouble);
  auto [b, a]  = random_sections({3, 2}, 3);
  for (bool reverse : {false, true})
    expect_gradients_match(
        [&](const auto& in) { return biquad_cascade(in[0], in[1], in[2], reverse); }, {x, b, a},
        1e-6, 24);
  // Broadcast coefficients (one filter for both channels) get the sum over channels.
  auto [b1, a1] = random_sections({3, 1}, 2);
  expect_gradients_match([&](const auto& in) { return biquad_cascade(in[0], in[1], in[2]); },
                         {x, b1, a1}, 1e-6, 24);
}

TEST(BiquadCascade, BackwardIsDifferentiableAgain) {
  // The gradient with create_graph, differentiated again, against finite differences of the
  // gradient (Hessian-vector products).
  at::manual_seed(4);
  at::Tensor x = at::randn({2, 150}, at::kDouble), weights = at::randn({2, 150}, at::kDouble);
  auto [b, a] = random_sections({2}, 2);
  for (bool reverse : {false, true})
    expect_gradients_match(
        recorded_gradients(
            [&](const auto& in) { return biquad_cascade(in[0], in[1], in[2], reverse); }, weights),
        {x, b, a}, 1e-5, 16);
}

TEST(BiquadCascade, FirstOrderBackwardEqualsTheRecordedOne) {
  at::manual_seed(5);
  at::Tensor x  = at::randn({4, 500}, at::kDouble).requires_grad_(true);
  auto [bs, as] = random_sections({4}, 3);
  at::Tensor b = bs.requires_grad_(true), a = as.requires_grad_(true);
  at::Tensor weights = at::randn({4, 500}, at::kDouble);
  auto fast = torch::autograd::grad({(biquad_cascade(x, b, a) * weights).sum()}, {x, b, a});
  auto recorded =
      torch::autograd::grad({(biquad_cascade(x, b, a) * weights).sum()}, {x, b, a}, {}, true, true);
  for (int i = 0; i < 3; ++i) EXPECT_LT(max_error(fast[i], recorded[i]), 1e-10) << i;
}

TEST(BiquadCascade, EveryGroupingOfRowsAndSectionsGivesTheSameValuesAndGradients) {
  // The kernel runs rows in groups of four, sections two at a time (the second some samples
  // behind), and a group of one or two rows with both sections of a pair in one vector; blocks
  // of 1024 samples. Every split of rows, sections and blocks against the direct-form loop and
  // the recorded adjoint, and a row's output bit for bit the same whatever group it is in.
  at::manual_seed(11);
  for (int64_t n_rows : {1, 2, 3, 4, 5, 6})
    for (int64_t n_sections : {1, 2, 3, 4, 5})
      for (int64_t length : {5, 1030, 2051})
        for (bool reverse : {false, true}) {
          SCOPED_TRACE(::testing::Message() << n_rows << " rows, " << n_sections << " sections, "
                                            << length << " samples, reverse " << reverse);
          at::Tensor x  = at::randn({n_rows, length}, at::kDouble).requires_grad_(true);
          auto [bs, as] = random_sections({n_rows}, n_sections, 0.99);
          at::Tensor b = bs.requires_grad_(true), a = as.requires_grad_(true);
          at::Tensor y = biquad_cascade(x, b, a, reverse);
          at::Tensor expected =
              reverse ? reference::biquad_cascade(x.detach().flip(-1), bs.detach(), as.detach())
                            .flip(-1)
                      : reference::biquad_cascade(x.detach(), bs.detach(), as.detach());
          EXPECT_LT(max_error(y, expected), 1e-11 * expected.abs().max().item<double>());
          at::Tensor alone = biquad_cascade(x.detach().narrow(0, 0, 1), bs.detach().narrow(0, 0, 1),
                                            as.detach().narrow(0, 0, 1), reverse);
          EXPECT_TRUE(at::equal(alone, y.detach().narrow(0, 0, 1)));
          at::Tensor weights = at::randn({n_rows, length}, at::kDouble);
          auto fast          = torch::autograd::grad({(y * weights).sum()}, {x, b, a});
          auto recorded      = torch::autograd::grad(
                   {(biquad_cascade(x, b, a, reverse) * weights).sum()}, {x, b, a}, {}, true, true);
          for (int i = 0; i < 3; ++i)
            EXPECT_LT(max_error(fast[i], recorded[i]),
                      1e-10 * (1 + recorded[i].abs().max().item<double>()))
                << i;
        }
}

TEST(BiquadCascade, FrequencySamplingIsCloseOnlyWhenTheResponseDecaysWithinItsTaps) {
  at::manual_seed(6);
  at::Tensor x     = at::randn({2, 20000}, at::kDouble);
  auto [b, a]      = random_sections({2}, 2, 0.9);
  at::Tensor exact = biquad_cascade(x, b, a);
  EXPECT_LT(max_error(biquad_cascade_frequency_sampling(x, b, a), exact),
            1e-9 * exact.abs().max().item<double>());
  // A pole at radius 0.9995 rings for ~10^4 samples: 4000 taps alias it.
  at::Tensor ringing = a.clone();
  ringing.select(-1, 1).fill_(-2 * 0.9995 * std::cos(0.05));
  ringing.select(-1, 2).fill_(0.9995 * 0.9995);
  ringing.select(-1, 0).fill_(1.0);
  at::Tensor slow = biquad_cascade(x, b, ringing);
  EXPECT_GT(max_error(biquad_cascade_frequency_sampling(x, b, ringing), slow),
            1e-2 * slow.abs().max().item<double>());
  EXPECT_THROW(biquad_cascade_frequency_sampling(x, b, a, 4001), c10::Error);
}

TEST(BiquadCascade, RejectsMisshapenArguments) {
  at::Tensor x = at::randn({2, 3, 50});
  at::Tensor c = at::rand({2, 3, 1, 3});
  EXPECT_THROW(biquad_cascade(x, c, c.narrow(-1, 0, 2)), c10::Error);      // a not [..., K, 3]
  EXPECT_THROW(biquad_cascade(x, at::rand({4, 1, 1, 3}), c), c10::Error);  // does not broadcast
  EXPECT_THROW(biquad_cascade(x, c.to(at::kDouble), c), c10::Error);       // dtype
  EXPECT_THROW(biquad_cascade(x, at::rand({2, 3, 2, 3}), c), c10::Error);  // section counts
  EXPECT_THROW(biquad_cascade(x.narrow(-1, 0, 0), c, c), c10::Error);      // empty
}

// ---- coefficients per sample ----------------------------------------------------------------

/// Sections [..., K, L, 3] whose poles move slowly (radius 0.5 to 0.95, angle ±0.3 rad around
/// a random one) and whose zeros sway; a0 ≠ 1.
std::pair<at::Tensor, at::Tensor> moving_sections(std::vector<int64_t> leading, int64_t n_sections,
                                                  int64_t length) {
  leading.push_back(n_sections);
  at::Tensor phase  = at::rand(leading, at::kDouble).unsqueeze(-1) * 6;
  at::Tensor time   = at::linspace(0, 6, length, at::kDouble);
  at::Tensor sway   = at::sin(time + phase);  // [..., K, L]
  at::Tensor radius = 0.725 + 0.225 * sway;
  at::Tensor angle =
      at::rand(leading, at::kDouble).unsqueeze(-1) * 2.5 + 0.3 + 0.3 * at::cos(time + phase);
  at::Tensor a0 = at::rand(leading, at::kDouble).unsqueeze(-1) + 0.5 + 0 * sway;
  at::Tensor a  = at::stack({a0, -2 * radius * at::cos(angle) * a0, radius.pow(2) * a0}, -1);
  leading.push_back(3);
  at::Tensor b = at::randn(leading, at::kDouble).unsqueeze(-2) * (1 + 0.5 * sway.unsqueeze(-1));
  return {b, a};
}

/// The direct form with each sample's coefficients, one plain loop per row in double precision.
at::Tensor varying_reference(const at::Tensor& x, const at::Tensor& b, const at::Tensor& a) {
  const int64_t length = x.size(-1);
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - 1);
  at::Tensor xs     = x.to(at::kDouble).reshape({-1, length}).clone();
  auto coefficients = [&](const at::Tensor& c) {
    std::vector<int64_t> full(shape);
    for (int64_t d : {c.size(-3), length, int64_t(3)}) full.push_back(d);
    return c.to(at::kDouble).expand(full).reshape({-1, c.size(-3), length, 3}).contiguous();
  };
  at::Tensor bs = coefficients(b), as = coefficients(a);
  auto y  = xs.accessor<double, 2>();
  auto ba = bs.accessor<double, 4>(), aa = as.accessor<double, 4>();
  for (int64_t r = 0; r < xs.size(0); ++r)
    for (int64_t k = 0; k < bs.size(1); ++k) {
      double u1 = 0, u2 = 0, v1 = 0, v2 = 0;
      for (int64_t n = 0; n < length; ++n) {
        auto bn  = ba[r][k][n];
        auto an  = aa[r][k][n];
        double u = y[r][n];
        double v = (bn[0] * u + bn[1] * u1 + bn[2] * u2 - an[1] * v1 - an[2] * v2) / an[0];
        u2 = u1, u1 = u, v2 = v1, v1 = v, y[r][n] = v;
      }
    }
  return xs.view(x.sizes());
}

TEST(BiquadCascadeTimeVarying, EqualsThePerSampleLoopAndTheFixedCascadeWhenConstant) {
  at::manual_seed(7);
  at::Tensor x        = at::randn({5, 2, 3000}, at::kDouble);
  auto [b, a]         = moving_sections({5, 1}, 3, 3000);  // one moving filter per node
  at::Tensor expected = varying_reference(x, b, a);
  const double peak   = expected.abs().max().item<double>();
  EXPECT_LT(max_error(biquad_cascade_time_varying(x, b, a), expected), 1e-12 * peak);
  EXPECT_LT(
      max_error(biquad_cascade_time_varying(x.to(at::kFloat), b.to(at::kFloat), a.to(at::kFloat)),
                expected),
      1e-5 * peak);
  // One filter per channel, and one for everything: the same loop.
  auto [b2, a2] = moving_sections({5, 2}, 2, 3000);
  EXPECT_LT(max_error(biquad_cascade_time_varying(x, b2, a2), varying_reference(x, b2, a2)),
            1e-12 * peak);
  auto [b3, a3] = moving_sections({}, 2, 3000);
  EXPECT_LT(max_error(biquad_cascade_time_varying(x, b3, a3), varying_reference(x, b3, a3)),
            1e-12 * peak);
  // The moving filter differs from its first sample's, held.
  auto held = [](const at::Tensor& c) { return c.narrow(-2, 0, 1).expand_as(c); };
  EXPECT_GT(max_error(biquad_cascade_time_varying(x, held(b), held(a)), expected), 1e-2 * peak);
  // Constant coefficients: the fixed kernel's output.
  auto [bf, af]    = random_sections({5, 1}, 3, 0.999);
  auto along       = [](const at::Tensor& c) { return c.unsqueeze(-2).expand({5, 1, 3, 3000, 3}); };
  at::Tensor fixed = biquad_cascade(x, bf, af);
  EXPECT_LT(max_error(biquad_cascade_time_varying(x, along(bf), along(af)), fixed),
            1e-11 * fixed.abs().max().item<double>());
}

TEST(BiquadCascadeTimeVarying, GradientsMatchFiniteDifferencesOnceAndTwice) {
  at::manual_seed(8);
  at::Tensor x = at::randn({3, 2, 120}, at::kDouble);
  auto [b, a]  = moving_sections({3, 1}, 2, 120);  // shared by both channels: sums over them
  expect_gradients_match(
      [&](const auto& in) { return biquad_cascade_time_varying(in[0], in[1], in[2]); }, {x, b, a},
      1e-6, 24);
  at::Tensor weights = at::randn_like(x);
  expect_gradients_match(
      recorded_gradients(
          [](const auto& in) { return biquad_cascade_time_varying(in[0], in[1], in[2]); }, weights),
      {x, b, a}, 1e-5, 16);
}

TEST(BiquadCascadeTimeVarying, FirstOrderBackwardEqualsTheRecordedOne) {
  at::manual_seed(9);
  at::Tensor x  = at::randn({4, 2, 700}, at::kDouble).requires_grad_(true);
  auto [bs, as] = moving_sections({4, 1}, 3, 700);
  at::Tensor b = bs.requires_grad_(true), a = as.requires_grad_(true);
  at::Tensor weights = at::randn({4, 2, 700}, at::kDouble);
  auto loss          = [&] { return (biquad_cascade_time_varying(x, b, a) * weights).sum(); };
  auto fast          = torch::autograd::grad({loss()}, {x, b, a});
  auto recorded      = torch::autograd::grad({loss()}, {x, b, a}, {}, true, true);
  for (int i = 0; i < 3; ++i)
    EXPECT_LT(max_error(fast[i], recorded[i]), 1e-10 * fast[i].abs().max().item<double>()) << i;
}

TEST(BiquadCascadeTimeVarying, TangentsEqualCentralDifferences) {
  at::manual_seed(10);
  at::Tensor x  = at::randn({2, 2, 400}, at::kDouble);
  auto [b, a]   = moving_sections({2, 1}, 2, 400);
  at::Tensor dx = at::randn_like(x), db = at::randn_like(b), da = at::randn_like(a) * 0.1;
  da.select(-1, 0).zero_();
  at::Tensor tangent;
  {
    ForwardMode mode;
    tangent = unpack_dual(
                  biquad_cascade_time_varying(make_dual(x, dx), make_dual(b, db), make_dual(a, da)))
                  .second;
  }
  const double step  = 1e-6;
  at::Tensor central = (biquad_cascade_time_varying(x + step * dx, b + step * db, a + step * da) -
                        biquad_cascade_time_varying(x - step * dx, b - step * db, a - step * da)) /
                       (2 * step);
  EXPECT_LT(max_error(tangent, central), 1e-6 * central.abs().max().item<double>());
}

TEST(BiquadCascadeTimeVarying, RejectsMisshapenArguments) {
  at::Tensor x = at::randn({2, 3, 50});
  at::Tensor c = at::rand({2, 3, 1, 50, 3});
  EXPECT_THROW(biquad_cascade_time_varying(x, c.narrow(-2, 0, 49), c), c10::Error);  // length
  EXPECT_THROW(biquad_cascade_time_varying(x, at::rand({4, 1, 1, 50, 3}), c), c10::Error);
  EXPECT_THROW(biquad_cascade_time_varying(x, c.to(at::kDouble), c), c10::Error);  // dtype
  EXPECT_THROW(biquad_cascade_time_varying(x, at::rand({2, 3, 2, 50, 3}), c), c10::Error);
  EXPECT_THROW(biquad_cascade_time_varying(x, at::rand({5, 2, 3, 1, 50, 3}), c), c10::Error);
}

TEST(BiquadCascadeScan, EqualsTheCpuKernelsInFloat64AndFloat32) {
  // The device kernels (numerators by shifts, poles by two_pole_scan) against the CPU kernels:
  // both directions, lengths below, at and off multiples of the scan's chunk, poles up to 0.999
  // (a long ring over 114000 samples), and moving filters shared by a node's channels.
  at::manual_seed(12);
  for (int64_t length : {1, 5, 64, 1000, 114000})
    for (bool reverse : {false, true}) {
      at::Tensor x        = at::randn({3, 2, length}, at::kDouble);
      auto [b, a]         = random_sections({3, 1}, 3, 0.999);
      at::Tensor expected = biquad_cascade(x, b, a, reverse);
      const double peak   = expected.abs().max().item<double>();
      const std::string where =
          "length " + std::to_string(length) + ", reverse " + std::to_string(reverse);
      EXPECT_LT(max_error(biquad_cascade_scan(x, b, a, reverse), expected), 1e-10 * peak) << where;
      auto single    = [](const at::Tensor& t) { return t.to(at::kFloat); };
      at::Tensor y32 = biquad_cascade_scan(single(x), single(b), single(a), reverse);
      EXPECT_EQ(y32.scalar_type(), at::kFloat);
      EXPECT_LT(max_error(y32, biquad_cascade(single(x), single(b), single(a), reverse)),
                1e-6 * peak)
          << where;
    }
  at::Tensor x        = at::randn({5, 2, 3000}, at::kDouble);
  auto [b, a]         = moving_sections({5, 1}, 3, 3000);
  at::Tensor expected = biquad_cascade_time_varying(x, b, a);
  const double peak   = expected.abs().max().item<double>();
  EXPECT_LT(max_error(biquad_cascade_time_varying_scan(x, b, a), expected), 1e-10 * peak);
  auto single = [](const at::Tensor& t) { return t.to(at::kFloat); };
  EXPECT_LT(max_error(biquad_cascade_time_varying_scan(single(x), single(b), single(a)),
                      biquad_cascade_time_varying(single(x), single(b), single(a))),
            1e-6 * peak);
}

}  // namespace
}  // namespace grafx::dsp
