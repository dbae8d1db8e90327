// Golden checks of the compressor and noise gate: identity at ratio 1, the static curves of the
// paper on steady levels, attack/release ballistics against the plain-loop reference, and the
// fused CPU Function of the paper's dynamics against their composed form.

#include <grafx/dsp/forward_mode.h>
#include <grafx/dsp/recursion.h>
#include <grafx/processors/compressor.h>
#include <grafx/processors/noise_gate.h>

#include "support/test_support.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <optional>

namespace grafx {
namespace {

using dsp::EnvelopeSmoothing;

TensorDict parameters(double log_threshold, double log_ratio, double log_knee,
                      std::vector<double> z_alphas, int64_t n = 1) {
  auto value = [n](double v) { return at::full({n, 1}, v, at::kDouble); };
  TensorDict p{{"log_threshold", value(log_threshold)},
               {"log_ratio", value(log_ratio)},
               {"log_knee", value(log_knee)}};
  if (z_alphas.size() == 1) p["z_alpha"] = value(z_alphas[0]);
  if (z_alphas.size() == 2)
    p["z_alpha_attack"] = value(z_alphas[0]), p["z_alpha_release"] = value(z_alphas[1]);
  return p;
}

/// The paper's quadratic-knee curves, written branch by branch as in Giannoulis et al. (2012):
/// output log-level G_y for input log-level g, threshold t, ratio r, knee width w.
double compressor_curve(double g, double t, double r, double w) {
  if (g < t - w / 2) return g;
  if (g > t + w / 2) return t + (g - t) / r;
  return g + (1 / r - 1) * std::pow(g - t + w / 2, 2) / (2 * w);
}
double gate_curve(double g, double t, double r, double w) {
  if (g > t + w / 2) return g;
  if (g < t - w / 2) return t + r * (g - t);
  return g + (1 - r) * std::pow(g - t - w / 2, 2) / (2 * w);
}

TEST(Dynamics, RatioOneIsTheIdentity) {
  at::manual_seed(1);
  at::Tensor x = at::randn({2, 2, 2000}, at::kDouble);
  for (auto smoothing : {EnvelopeSmoothing::kOnePole, EnvelopeSmoothing::kBallistics}) {
    std::vector<double> z = smoothing == EnvelopeSmoothing::kOnePole
                                ? std::vector<double>{2.0}
                                : std::vector<double>{1.0, 4.0};
    TensorDict p          = parameters(-3.0, -60.0, 0.5, z, 2);  // R = 1 + e^−60
    EXPECT_TRUE(
        at::allclose(Compressor({8000}, smoothing).forward({x}, p).outputs[0], x, 1e-12, 1e-14));
    EXPECT_TRUE(
        at::allclose(NoiseGate({8000}, smoothing).forward({x}, p).outputs[0], x, 1e-12, 1e-14));
  }
}

TEST(Dynamics, SteadyLevelsFollowThePapersStaticCurves) {
  // Constant (DC) signals: the smoothed energy settles at a², so the last sample's gain is the
  // static curve's at G_u = log(a² + 1e−5). Levels below, inside and above the knee.
  std::vector<double> amplitudes = {0.001, 0.02, 0.05, 0.08, 0.15, 0.4, 1.0};
  int64_t n                      = int64_t(amplitudes.size());
  at::Tensor x =
      at::tensor(amplitudes, at::kDouble).view({n, 1, 1}).expand({n, 2, 4000}).contiguous();
  double log_threshold = 0.5, log_ratio = std::log(3.0), log_knee = 0.0;  // T = −5.5, R = 4, W = 1
  TensorDict p          = parameters(log_threshold, log_ratio, log_knee, {3.0}, n);
  at::Tensor compressed = Compressor({8000}).forward({x}, p).outputs[0];
  at::Tensor gated      = NoiseGate({8000}).forward({x}, p).outputs[0];
  for (int64_t i = 0; i < n; ++i) {
    double a = amplitudes[size_t(i)], g = std::log(a * a + 1e-5), t = log_threshold - 6;
    // The output's log energy is the curve's: the amplitude gain is half the log-energy gain.
    EXPECT_NEAR(compressed[i][1][3999].item<double>(),
                a * std::exp((compressor_curve(g, t, 4.0, 1.0) - g) / 2), 1e-9 * a)
        << "compressor at amplitude " << a;
    EXPECT_NEAR(gated[i][0][3999].item<double>(),
                a * std::exp((gate_curve(g, t, 4.0, 1.0) - g) / 2), 1e-9 * a)
        << "gate at amplitude " << a;
  }
}

TEST(Dynamics, BallisticsSmoothTheLevelWithAttackAndRelease) {
  // A burst: silence, loud, quiet. The gain must follow the curve of the level smoothed by the
  // plain-loop ballistics (attack while the level rises, release while it falls).
  at::Tensor level =
      at::cat({at::zeros({300}), at::full({700}, 0.8), at::full({1000}, 0.05)}).to(at::kDouble);
  at::Tensor x = level.view({1, 1, -1}).expand({1, 2, 2000}).contiguous();
  for (auto [z_attack, z_release] : {std::pair{0.0, 6.0}, std::pair{6.0, 0.0}}) {
    TensorDict p = parameters(0.0, std::log(4.0), 0.0, {z_attack, z_release});
    at::Tensor y = Compressor({8000}, EnvelopeSmoothing::kBallistics).forward({x}, p).outputs[0];
    auto alpha   = [](double z) {
      return at::full({1}, std::min(1 / (1 + std::exp(-z)), 1 - 1e-5), at::kDouble);
    };
    at::Tensor envelope =
        dsp::reference::ballistics(level.pow(2).view({1, -1}), alpha(z_attack), alpha(z_release),
                                   at::zeros({1}, at::kDouble))[0];
    for (int64_t n : {299, 300, 310, 999, 1000, 1010, 1500, 1999}) {
      double g = std::log(envelope[n].item<double>() + 1e-5);
      double expected =
          level[n].item<double>() * std::exp((compressor_curve(g, -6.0, 5.0, 1.0) - g) / 2);
      EXPECT_NEAR(y[0][0][n].item<double>(), expected, 1e-9)
          << "sample " << n << ", z_attack " << z_attack;
    }
  }
  // Equal coefficients: the one-pole compressor.
  at::Tensor noise    = at::randn({2, 2, 1000}, at::kDouble);
  TensorDict one_pole = parameters(-1.0, 0.5, 0.2, {1.5}, 2),
             both     = parameters(-1.0, 0.5, 0.2, {1.5, 1.5}, 2);
  EXPECT_TRUE(at::allclose(
      Compressor({8000}).forward({noise}, one_pole).outputs[0],
      Compressor({8000}, EnvelopeSmoothing::kBallistics).forward({noise}, both).outputs[0], 1e-12,
      1e-14));
}

TEST(Dynamics, SidechainTypesDetectOnTheSidechainAndGainTheMain) {
  for (auto curve : {Dynamics::Curve::kCompressor, Dynamics::Curve::kNoiseGate}) {
    Dynamics keyed({8000}, curve, EnvelopeSmoothing::kBallistics, Dynamics::Detector::kSidechain);
    Dynamics plain({8000}, curve, EnvelopeSmoothing::kBallistics);
    ASSERT_EQ(keyed.inlets(), (std::vector<std::string>{"main", "sidechain"}));
    at::manual_seed(3);
    TensorDict p   = parameters(1.0, 1.0, 0.0, {-2.0, 3.0}, 2);
    at::Tensor x   = at::randn({2, 2, 4000}, at::kDouble) * 0.5;
    at::Tensor key = (at::rand({2, 2, 4000}, at::kDouble) + 0.5) *
                     at::linspace(0.01, 3, 4000, at::kDouble);  // never zero, rising
    // The same signal on both inlets: the ordinary processor, exactly.
    EXPECT_TRUE(at::equal(keyed.forward({x, x}, p).outputs[0], plain.forward({x}, p).outputs[0]));
    // Otherwise the gain the ordinary processor applies to the key, applied to the main.
    at::Tensor gain = plain.forward({key}, p).outputs[0] / key;
    EXPECT_TRUE(at::allclose(keyed.forward({x, key}, p).outputs[0], x * gain, 1e-12, 1e-12));
  }
  // A silent key leaves the main untouched by a compressor and closes a gate.
  Dynamics compressor({8000}, Dynamics::Curve::kCompressor, EnvelopeSmoothing::kBallistics,
                      Dynamics::Detector::kSidechain);
  TensorDict p = parameters(1.0, 1.0, 0.0, {-2.0, 3.0}, 1);
  at::Tensor x = at::randn({1, 2, 1000}, at::kDouble);
  EXPECT_TRUE(at::allclose(compressor.forward({x, at::zeros_like(x)}, p).outputs[0], x));
}

TEST(Dynamics, PhysicalParameters) {
  Compressor compressor({30000});
  TensorDict physical = compressor.to_physical(parameters(0.0, 0.0, 0.0, {0.0}));
  EXPECT_NEAR(physical.at("threshold_db").item<double>(), -6 * 10 / std::log(10.0),
              1e-9);  // −26.06 dB
  EXPECT_NEAR(physical.at("ratio").item<double>(), 2.0, 1e-12);
  EXPECT_NEAR(physical.at("knee_db").item<double>(), 10 / std::log(10.0), 1e-9);
  EXPECT_NEAR(physical.at("smoothing_ms").item<double>(), 1000 / (30000 * std::log(2.0)), 1e-9);
  EXPECT_EQ(Compressor({30000}, EnvelopeSmoothing::kBallistics).name(), "compressor_ballistics");
  EXPECT_EQ(NoiseGate({30000}, EnvelopeSmoothing::kBallistics).name(), "noise_gate_ballistics");
}

Dynamics configured(Dynamics::Curve curve, ProcessorOptions options) {
  ProcessorConfig config{8000};
  config.options = std::move(options);
  return Dynamics(config, curve, EnvelopeSmoothing::kOnePole);
}

TEST(Dynamics, HardAndExponentialKneesFollowGrafxsCurvesOnSteadyLevels) {
  // GRAFX's hard and exponential gain computers (grafx.md §4.3), written out, on DC levels whose
  // unsmoothed energy is exactly a² (level_smoothing none), with an amplitude detector too: for
  // a DC signal mean |x| squared is the energy as well.
  std::vector<double> amplitudes = {0.001, 0.03, 0.05, 0.07, 0.2, 1.0};
  const int64_t n                = int64_t(amplitudes.size());
  at::Tensor x =
      at::tensor(amplitudes, at::kDouble).view({n, 1, 1}).expand({n, 2, 50}).contiguous();
  const double log_threshold = 0.5, log_ratio = std::log(3.0), log_knee = 0.7;
  const double t = log_threshold - 6, r = 4, w = std::exp(log_knee);
  auto value    = [n](double v) { return at::full({n, 1}, v, at::kDouble); };
  TensorDict p  = {{"log_threshold", value(log_threshold)}, {"log_ratio", value(log_ratio)}};
  auto softplus = [](double v) { return std::log1p(std::exp(v)); };
  for (const char* detection : {"energy", "amplitude"}) {
    for (auto curve : {Dynamics::Curve::kCompressor, Dynamics::Curve::kNoiseGate}) {
      const bool gate      = curve == Dynamics::Curve::kNoiseGate;
      Dynamics hard        = configured(curve, {{"knee", std::string("hard")},
                                                {"level_smoothing", std::string("none")},
                                                {"detection", std::string(detection)}});
      Dynamics exponential = configured(curve, {{"knee", std::string("exponential")},
                                                {"level_smoothing", std::string("none")},
                                                {"detection", std::string(detection)}});
      at::Tensor y_hard    = hard.forward({x}, p).outputs[0];
      TensorDict pk        = p;
      pk["log_knee"]       = value(log_knee);
      at::Tensor y_exp     = exponential.forward({x}, pk).outputs[0];
      for (int64_t i = 0; i < n; ++i) {
        const double a = amplitudes[size_t(i)], g = std::log(a * a + 1e-5);
        const double hard_gain =
            (gate ? std::min(g, r * (g - t) + t) : std::min(g, t + (g - t) / r)) - g;
        const double exp_gain =
            gate ? -(r - 1) * softplus(w * (t - g)) / w : (1 / r - 1) * softplus(w * (g - t)) / w;
        EXPECT_NEAR(y_hard[i][0][49].item<double>(), a * std::exp(hard_gain / 2), 1e-12)
            << detection << (gate ? " gate" : " compressor") << ", hard knee, amplitude " << a;
        EXPECT_NEAR(y_exp[i][1][49].item<double>(), a * std::exp(exp_gain / 2), 1e-12)
            << detection << (gate ? " gate" : " compressor") << ", exponential, amplitude " << a;
      }
    }
  }
}

TEST(Dynamics, GainComputerGradientsEqualAutogradsOfTheCurve) {
  // The gain computer's hand-written passes (CPU loops, and ATen operations when recorded)
  // against autograd through the same curve written as plain operations (forward mode's path),
  // for every knee, compressor and gate, levels below, inside and above the knees.
  at::manual_seed(12);
  const int64_t n = 3;
  at::Tensor x    = (at::randn({n, 2, 3000}, at::kDouble) *
                  at::logspace(-3, 0, n, 10, at::kDouble).view({n, 1, 1}));
  TensorDict p    = parameters(0.5, std::log(3.0), 0.7, {1.0}, n);
  for (const char* knee : {"hard", "quadratic", "exponential"})
    for (auto curve : {Dynamics::Curve::kCompressor, Dynamics::Curve::kNoiseGate}) {
      Dynamics dynamics = configured(curve, {{"knee", std::string(knee)}});
      TensorDict leaves;
      for (const auto& [name, t] : p)
        if (name != "log_knee" || std::string(knee) != "hard")  // a hard knee has no width
          leaves[name] = t.clone().requires_grad_(true);
      at::Tensor input               = x.clone().requires_grad_(true);
      at::Tensor weights             = at::randn_like(x);
      std::vector<at::Tensor> inputs = {input};
      for (auto& [name, t] : leaves) inputs.push_back(t);
      at::Tensor y = dynamics.forward({input}, leaves).outputs[0];
      auto ours    = torch::autograd::grad({(y * weights).sum()}, inputs, {}, true, true);
      // Forward mode's path: tangents make the processor compute the curve in plain operations.
      at::Tensor plain;
      {
        dsp::ForwardMode mode;
        TensorDict duals;
        for (auto& [name, t] : leaves) duals[name] = dsp::make_dual(t, at::zeros_like(t));
        at::Tensor dual_input = dsp::make_dual(input, at::zeros_like(input));
        plain = dsp::unpack_dual(dynamics.forward({dual_input}, duals).outputs[0]).first;
      }
      EXPECT_TRUE(at::allclose(y, plain, 1e-12, 1e-14)) << knee;
      auto theirs = torch::autograd::grad({(plain * weights).sum()}, inputs);
      for (size_t i = 0; i < inputs.size(); ++i)
        EXPECT_TRUE(at::allclose(ours[i], theirs[i], 1e-9, 1e-12))
            << knee << (curve == Dynamics::Curve::kNoiseGate ? " gate" : " compressor")
            << ", input " << i;
    }
}

/// The outputs and gradients of one call of `dynamics` on the inputs, parameters and, with
/// `mixed`, the wet amount (the last leaf) of `leaves`: gradients of Σ y·weights taken with
/// `create_graph` or not; with `composed`, the inputs carry zero tangents, which makes the
/// processor compose its dynamics of ATen operations and the kernels (the path for devices,
/// automation and forward mode) instead of its fused Function, and the render's mix follows.
struct Differentiated {
  at::Tensor y;
  std::vector<at::Tensor> gradients;
};
Differentiated differentiate(const Dynamics& dynamics, const std::vector<at::Tensor>& leaves,
                             const std::vector<std::string>& names, size_t n_inputs,
                             const at::Tensor& weights, bool composed, bool create_graph,
                             bool mixed) {
  std::optional<dsp::ForwardMode> mode;
  if (composed) mode.emplace();
  auto carried = [&](const at::Tensor& t) {
    return composed ? dsp::make_dual(t, at::zeros_like(t)) : t;
  };
  std::vector<at::Tensor> inputs;
  TensorDict p;
  const size_t n_parameters = leaves.size() - (mixed ? 1 : 0);
  for (size_t i = 0; i < n_parameters; ++i)
    if (i < n_inputs)
      inputs.push_back(carried(leaves[i]));
    else
      p[names[i - n_inputs]] = carried(leaves[i]);
  at::Tensor y;
  if (!mixed) {
    y = dynamics.forward(inputs, p).outputs[0];
  } else if (composed) {
    y = at::lerp(inputs[0], dynamics.forward(inputs, p).outputs[0], carried(leaves.back()));
  } else {
    std::optional<ProcessorOutput> out = dynamics.forward_mixed(inputs, p, leaves.back());
    EXPECT_TRUE(out.has_value());
    y = out ? out->outputs[0] : at::Tensor();
  }
  if (composed) y = dsp::unpack_dual(y).first;
  return {y, torch::autograd::grad({(y * weights).sum()}, leaves, {}, true, create_graph)};
}

TEST(Dynamics, TheFusedCompressorAndGateEqualTheirComposedForm) {
  // The paper's dynamics (one-pole level smoothing, energy detection) run as one Function on the
  // CPU, with a hand-written backward pass, or a recorded one under create_graph. Each against
  // the same dynamics composed of ATen operations and the kernels, in float64: outputs,
  // gradients of every input and parameter, and second derivatives (a gradient of the first
  // gradients), for compressor and gate, each knee, with and without a sidechain; gradients
  // the same to the bit on one thread and two; float32 near float64. Each alone and with a
  // dry/wet mix folded in (the render's forward_mixed), against the mix after it.
  at::manual_seed(21);
  const int64_t n = 3, length = 5000;
  at::Tensor level = at::logspace(-3, 0, n, 10, at::kDouble).view({n, 1, 1});
  at::Tensor x     = at::randn({n, 2, length}, at::kDouble) * level;
  at::Tensor key   = at::randn({n, 2, length}, at::kDouble) * level.flip(0);
  TensorDict p     = parameters(0.5, std::log(3.0), 0.7, {1.0}, n);
  for (const char* knee : {"hard", "quadratic", "exponential"})
    for (auto curve : {Dynamics::Curve::kCompressor, Dynamics::Curve::kNoiseGate})
      for (auto detector : {Dynamics::Detector::kSelf, Dynamics::Detector::kSidechain})
        for (bool mixed : {false, true}) {
          ProcessorConfig config{8000};
          config.options = {{"knee", std::string(knee)}};
          Dynamics dynamics(config, curve, EnvelopeSmoothing::kOnePole, detector);
          const bool keyed = detector == Dynamics::Detector::kSidechain;
          std::string what = std::string(knee) +
                             (curve == Dynamics::Curve::kNoiseGate ? " gate" : " compressor") +
                             (keyed ? " with a sidechain" : "") + (mixed ? ", mixed" : "");
          std::vector<at::Tensor> leaves = {x.clone().requires_grad_(true)};
          if (keyed) leaves.push_back(key.clone().requires_grad_(true));
          const size_t n_inputs = leaves.size();
          std::vector<std::string> names;
          for (const auto& [name, t] : p)
            if (name != "log_knee" || std::string(knee) != "hard") {
              names.push_back(name);
              leaves.push_back(t.clone().requires_grad_(true));
            }
          if (mixed)
            leaves.push_back(
                at::tensor({0.3, 0.7, 0.95}, at::kDouble).view({n, 1, 1}).requires_grad_());
          const at::Tensor weights = at::randn_like(x);
          auto run                 = [&](bool composed, bool create_graph) {
            return differentiate(dynamics, leaves, names, n_inputs, weights, composed, create_graph,
                                                 mixed);
          };
          const Differentiated fused = run(false, false), recorded = run(false, true),
                               composed = run(true, true);
          EXPECT_TRUE(at::allclose(fused.y, composed.y, 1e-12, 1e-14)) << what;
          for (size_t i = 0; i < leaves.size(); ++i) {
            EXPECT_TRUE(at::allclose(fused.gradients[i], composed.gradients[i], 1e-9, 1e-12))
                << what << ", leaf " << i;
            EXPECT_TRUE(at::allclose(recorded.gradients[i], composed.gradients[i], 1e-12, 1e-14))
                << what << ", leaf " << i;
          }
          // Second derivatives: ∇(Σ_i ∇_i·v_i), from the recorded pass and from the composed one.
          auto second = [&](const Differentiated& d) {
            at::Tensor dot = at::zeros({}, at::kDouble);
            for (size_t i = 0; i < leaves.size(); ++i)
              dot = dot + (d.gradients[i] * at::full_like(leaves[i], 0.3 + 0.1 * double(i))).sum();
            return torch::autograd::grad({dot}, leaves, {}, true, false, true);
          };
          const auto ours = second(recorded), theirs = second(composed);
          for (size_t i = 0; i < leaves.size(); ++i)
            EXPECT_TRUE(at::allclose(ours[i], theirs[i], 1e-9, 1e-12))
                << what << ", second derivative of leaf " << i;
          // Threads: partial sums kept per block of samples and added in block order.
          const int threads = at::get_num_threads();
          at::set_num_threads(1);
          const Differentiated one_thread = run(false, false);
          at::set_num_threads(2);
          const Differentiated two_threads = run(false, false);
          at::set_num_threads(threads);
          for (size_t i = 0; i < leaves.size(); ++i)
            EXPECT_TRUE(at::equal(one_thread.gradients[i], two_threads.gradients[i]))
                << what << ", leaf " << i;
          // float32: within float32's rounding of the float64 result.
          std::vector<at::Tensor> singles;
          for (const at::Tensor& t : leaves)
            singles.push_back(t.detach().to(at::kFloat).requires_grad_(true));
          const Differentiated single = differentiate(dynamics, singles, names, n_inputs,
                                                      weights.to(at::kFloat), false, false, mixed);
          auto near                   = [](const at::Tensor& a, const at::Tensor& b) {
            return (a.to(at::kDouble) - b).abs().max().item<double>() <=
                   1e-4 * b.abs().max().item<double>() + 1e-12;
          };
          EXPECT_TRUE(near(single.y, fused.y)) << what;
          for (size_t i = 0; i < leaves.size(); ++i)
            EXPECT_TRUE(near(single.gradients[i], fused.gradients[i])) << what << ", leaf " << i;
        }
}

TEST(Dynamics, AmplitudeDetectionSmoothsTheMeanAbsoluteValue) {
  at::manual_seed(4);
  at::Tensor x = at::randn({1, 2, 800}, at::kDouble);
  TensorDict p = parameters(-1.0, 1.0, 0.0, {2.0});
  at::Tensor y = configured(Dynamics::Curve::kCompressor, {{"detection", std::string("amplitude")}})
                     .forward({x}, p)
                     .outputs[0];
  const double alpha = 1 / (1 + std::exp(-2.0));
  at::Tensor envelope =
      dsp::reference::one_pole(x.abs().mean(1), at::full({1}, alpha, at::kDouble));
  for (int64_t n : {0, 5, 100, 799}) {
    const double g    = std::log(std::pow(envelope[0][n].item<double>(), 2) + 1e-5);
    const double gain = (compressor_curve(g, -7.0, 1 + std::exp(1.0), 1.0) - g) / 2;
    EXPECT_NEAR(y[0][1][n].item<double>(), x[0][1][n].item<double>() * std::exp(gain), 1e-12);
  }
}

TEST(Dynamics, GainSmoothingIsAnExactRecursionInEitherDomainAndCanFall) {
  // A step from quiet to loud: the unsmoothed gain falls at once; a smoothed gain follows the
  // plain-loop recursion of it, from unity gain, in the linear or the log domain.
  at::Tensor level =
      at::cat({at::full({200}, 0.01), at::full({600}, 0.9), at::full({400}, 0.01)}).to(at::kDouble);
  at::Tensor x = level.view({1, 1, -1}).expand({1, 2, 1200}).contiguous();
  TensorDict p = parameters(0.0, std::log(4.0), 0.0, {});
  Dynamics raw_gain =
      configured(Dynamics::Curve::kCompressor, {{"level_smoothing", std::string("none")}});
  const at::Tensor gain = raw_gain.forward({x}, p).outputs[0][0][0] / level;  // exp(gain/2)
  auto alpha = [](double z) { return at::full({1}, 1 / (1 + std::exp(-z)), at::kDouble); };
  for (const char* domain : {"linear", "log"}) {
    const bool log_domain = std::string(domain) == "log";
    at::Tensor g          = (log_domain ? gain.log() : gain).view({1, -1});
    const double unity    = log_domain ? 0.0 : 1.0;
    // One pole.
    Dynamics one_pole =
        configured(Dynamics::Curve::kCompressor, {{"level_smoothing", std::string("none")},
                                                  {"gain_smoothing", std::string("one_pole")},
                                                  {"gain_smoothing_domain", std::string(domain)}});
    TensorDict q        = p;
    q["z_alpha_gain"]   = at::full({1, 1}, 4.0, at::kDouble);
    at::Tensor expected = dsp::reference::one_pole(g - unity, alpha(4.0)) + unity;
    if (log_domain) expected = expected.exp();
    at::Tensor y = one_pole.forward({x}, q).outputs[0][0][0] / level;
    EXPECT_TRUE(at::allclose(y, expected[0], 1e-12, 1e-12)) << domain << ", one pole";
    // Ballistics: attack while the gain falls (fast here), release while it rises (slow).
    Dynamics ballistics =
        configured(Dynamics::Curve::kCompressor, {{"level_smoothing", std::string("none")},
                                                  {"gain_smoothing", std::string("ballistics")},
                                                  {"gain_smoothing_domain", std::string(domain)}});
    TensorDict b              = p;
    b["z_alpha_gain_attack"]  = at::full({1, 1}, 1.0, at::kDouble);
    b["z_alpha_gain_release"] = at::full({1, 1}, 6.0, at::kDouble);
    at::Tensor smoothed =
        -dsp::reference::ballistics(-g, alpha(1.0), alpha(6.0), at::full({1}, -unity, at::kDouble));
    if (log_domain) smoothed = smoothed.exp();
    at::Tensor yb = ballistics.forward({x}, b).outputs[0][0][0] / level;
    EXPECT_TRUE(at::allclose(yb, smoothed[0], 1e-12, 1e-12)) << domain << ", ballistics";
    // The gain falls below unity (GRAFX's log-domain smoother cannot: its ReLU keeps it ≥ 1)
    // and releases slowly after the step.
    EXPECT_LT(yb[700].item<double>(), 0.6) << domain;
    EXPECT_LT(yb[850].item<double>(), yb[1199].item<double>()) << domain;
    EXPECT_LT(yb[1199].item<double>(), 1.0 + 1e-12) << domain;
  }
}

TEST(Dynamics, OptionsDecideTheParameters) {
  auto names = [](const Dynamics& d) {
    std::vector<std::string> out;
    for (const auto& spec : d.parameter_specs()) out.push_back(spec.name);
    return out;
  };
  EXPECT_EQ(
      names(configured(Dynamics::Curve::kNoiseGate, {{"knee", std::string("hard")},
                                                     {"level_smoothing", std::string("ballistics")},
                                                     {"gain_smoothing", std::string("one_pole")}})),
      (std::vector<std::string>{"log_threshold", "log_ratio", "z_alpha_attack", "z_alpha_release",
                                "z_alpha_gain"}));
  EXPECT_EQ(
      configured(Dynamics::Curve::kCompressor, {{"level_smoothing", std::string("ballistics")}})
          .name(),
      "compressor");  // the type's name, whatever its options
  EXPECT_GRAFX_ERROR(configured(Dynamics::Curve::kCompressor, {{"knee", std::string("soft")}}),
                     "grafx.processor.options",
                     "option \"knee\": expected one of hard, quadratic, exponential, but got "
                     "\"soft\"");
}

}  // namespace
}  // namespace grafx
