// Filters and equalizers: magnitude responses measured on an impulse against the analytic
// responses of their formulas, written out here independently of the library (RBJ cookbook,
// state-variable prototype, Liski & Välimäki bands, cosine sums); stability under random raw
// parameters; the identity at initial values.

#include <grafx/dsp/fir.h>
#include <grafx/processors/fir_filters.h>
#include <grafx/processors/graphic_eq.h>
#include <grafx/processors/registry.h>

#include "support/test_support.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <complex>
#include <functional>

namespace grafx {
namespace {

using Complex              = std::complex<double>;
constexpr SampleRate kRate = 44100;
constexpr int64_t kLength  = 1 << 16;

/// Raw parameters of one node from physical values; unnamed parameters keep their initial mean.
TensorDict raw_parameters(const Processor& p,
                          const std::map<std::string, std::vector<double>>& physical) {
  TensorDict raw;
  for (const auto& spec : p.parameter_specs()) {
    auto it = physical.find(spec.physical_name);
    if (it == physical.end()) {
      raw[spec.name] = at::full(spec.shape_for(1), spec.init_mean, at::kDouble);
      continue;
    }
    raw[spec.name] = spec.to_raw(at::tensor(it->second, at::kDouble).view(spec.shape_for(1)));
  }
  return raw;
}

/// Spectrum (dB) of the response of channel `channel` to an impulse at t = 0 (2 channels).
at::Tensor measured_db(const Processor& p, const TensorDict& raw, at::Tensor impulse = {}) {
  if (!impulse.defined()) {
    impulse = at::zeros({1, 2, kLength}, at::kDouble);
    impulse.select(2, 0).fill_(1.0);
  }
  at::Tensor y = p.forward({impulse}, raw).outputs[0];
  return 20 * at::log10(at::fft_rfft(y, kLength, -1).abs());  // 1×2×F
}

/// Expects the measured dB to equal H(ω) in dB within 0.01 dB up to 0.9·Nyquist (where the
/// expected response is above −60 dB: notches are compared only to that depth).
void expect_response(const at::Tensor& measured, const std::function<Complex(double)>& h,
                     const std::string& what) {
  int64_t bins = measured.size(-1), checked = 0;
  double worst = 0;
  for (int64_t k = 1; k < int64_t(0.9 * double(bins)); k += 7) {
    double omega    = M_PI * double(k) / double(bins - 1),
           expected = 20 * std::log10(std::abs(h(omega)));
    if (expected < -60) continue;
    worst = std::max(worst, std::abs(measured[k].item<double>() - expected));
    ++checked;
  }
  EXPECT_GT(checked, 100) << what;
  EXPECT_LT(worst, 0.01) << what << ": worst difference in dB";
}

Complex z1(double omega) { return std::polar(1.0, -omega); }

/// The cookbook, written out for one section.
Complex cookbook(const std::string& shape, double f0, double q, double db, double omega) {
  double w0 = 2 * M_PI * f0 / double(kRate), c = std::cos(w0), alpha = std::sin(w0) / (2 * q);
  double a = std::pow(10.0, db / 40), sa = 2 * std::sqrt(a) * alpha;
  std::array<double, 3> b{}, d{1 + alpha, -2 * c, 1 - alpha};
  if (shape == "lowpass") b = {(1 - c) / 2, 1 - c, (1 - c) / 2};
  if (shape == "highpass") b = {(1 + c) / 2, -(1 + c), (1 + c) / 2};
  if (shape == "bandpass") b = {alpha, 0, -alpha};
  if (shape == "bandreject") b = {1, -2 * c, 1};
  if (shape == "allpass") b = {1 - alpha, -2 * c, 1 + alpha};
  if (shape == "peaking")
    b = {1 + alpha * a, -2 * c, 1 - alpha * a}, d = {1 + alpha / a, -2 * c, 1 - alpha / a};
  if (shape == "low_shelf") {
    b = {a * ((a + 1) - (a - 1) * c + sa), 2 * a * ((a - 1) - (a + 1) * c),
         a * ((a + 1) - (a - 1) * c - sa)};
    d = {(a + 1) + (a - 1) * c + sa, -2 * ((a - 1) + (a + 1) * c), (a + 1) + (a - 1) * c - sa};
  }
  if (shape == "high_shelf") {
    b = {a * ((a + 1) + (a - 1) * c + sa), -2 * a * ((a - 1) + (a + 1) * c),
         a * ((a + 1) + (a - 1) * c - sa)};
    d = {(a + 1) - (a - 1) * c + sa, 2 * ((a - 1) - (a + 1) * c), (a + 1) - (a - 1) * c - sa};
  }
  Complex z = z1(omega);
  return (b[0] + b[1] * z + b[2] * z * z) / (d[0] + d[1] * z + d[2] * z * z);
}

TEST(Filters, CookbookFiltersHaveTheCookbookResponse) {
  struct Case {
    std::string shape;
    double f0, q, db;
  };
  for (const Case& c :
       {Case{"lowpass", 1000, M_SQRT1_2, 0}, Case{"highpass", 2000, 1.5, 0},
        Case{"bandpass", 800, 2, 0}, Case{"bandreject", 3000, 1, 0}, Case{"allpass", 500, 0.7, 0},
        Case{"peaking", 1000, 1, 6}, Case{"low_shelf", 200, M_SQRT1_2, -4},
        Case{"high_shelf", 5000, M_SQRT1_2, 3}}) {
    auto p = make_processor(c.shape, {kRate});
    std::string f =
        c.shape == "lowpass" || c.shape == "highpass" || c.shape.find("shelf") != std::string::npos
            ? "cutoff_hz"
            : "centre_hz";
    std::map<std::string, std::vector<double>> physical{{f, {c.f0}}, {"q", {c.q}}};
    if (c.db != 0) physical["gain_db"] = {c.db};
    at::Tensor db = measured_db(*p, raw_parameters(*p, physical))[0][0];
    expect_response(
        db, [&](double w) { return cookbook(c.shape, c.f0, c.q, c.db, w); }, c.shape);
  }
  // The cookbook's landmarks, from the measured spectrum (bin k is k·fs/L Hz).
  auto at_hz = [](const at::Tensor& db, double hz) {
    return db[int64_t(std::lround(hz * kLength / kRate))].item<double>();
  };
  auto lowpass = make_processor("lowpass", {kRate});
  at::Tensor db =
      measured_db(*lowpass, raw_parameters(*lowpass, {{"cutoff_hz", {kRate / 16.0}}}))[0][0];
  EXPECT_NEAR(at_hz(db, kRate / 16.0), -3.0103, 1e-3);  // q = 0.7071 is the initial value
  auto peaking = make_processor("peaking", {kRate});
  db           = measured_db(
                *peaking, raw_parameters(*peaking, {{"centre_hz", {kRate / 32.0}}, {"gain_db", {6}}}))[0][0];
  EXPECT_NEAR(at_hz(db, kRate / 32.0), 6.0, 1e-3);
}

TEST(Filters, FreeBiquadPoleZeroAndStateVariableFilterHaveTheirFormulasResponses) {
  auto biquad    = make_processor("biquad", {kRate});
  TensorDict raw = {{"b", at::tensor({0.2, -0.5, 0.3}, at::kDouble).view({1, 3})},
                    {"z_a1", at::full({1, 1}, -0.6, at::kDouble)},
                    {"z_a2", at::full({1, 1}, 0.4, at::kDouble)}};
  double a1 = 2 * std::tanh(-0.6), a2 = ((2 - std::abs(a1)) * std::tanh(0.4) + std::abs(a1)) / 2;
  expect_response(
      measured_db(*biquad, raw)[0][0],
      [&](double w) {
        Complex z = z1(w);
        return (1.2 - 0.5 * z + 0.3 * z * z) / (1.0 + a1 * z + a2 * z * z);
      },
      "biquad");

  auto pole_zero = make_processor("pole_zero", {kRate});
  Complex pole(0.6, 0.7), zero(-0.3, 0.9);
  raw = raw_parameters(*pole_zero, {{"gain_db", {-3}},
                                    {"pole", {pole.real(), pole.imag()}},
                                    {"zero", {zero.real(), zero.imag()}}});
  expect_response(
      measured_db(*pole_zero, raw)[0][0],
      [&](double w) {
        Complex z = z1(w);
        return std::pow(10.0, -3.0 / 20) * (1.0 - zero * z) * (1.0 - std::conj(zero) * z) /
               ((1.0 - pole * z) * (1.0 - std::conj(pole) * z));
      },
      "pole_zero");
  EXPECT_GRAFX_ERROR(raw_parameters(*pole_zero, {{"pole", {0.9, 0.9}}}),
                     "grafx.processor.parameters", "expected a pole inside the unit circle");

  // The analog state-variable prototype through the bilinear transform s = j·tan(ω/2).
  auto svf  = make_processor("state_variable_filter", {kRate});
  double fc = 1500, q = 3, hp = 0.3, bp = -0.7, lp = 1.1;
  raw      = raw_parameters(*svf, {{"cutoff_hz", {fc}},
                                   {"q", {q}},
                                   {"highpass_mix", {hp}},
                                   {"bandpass_mix", {bp}},
                                   {"lowpass_mix", {lp}}});
  double g = std::tan(M_PI * fc / kRate);
  expect_response(
      measured_db(*svf, raw)[0][0],
      [&](double w) {
        Complex s(0, std::tan(w / 2));
        return (hp * s * s + bp * g * s + lp * g * g) / (s * s + g / q * s + g * g);
      },
      "state_variable_filter");
}

TEST(Filters, ParametricEqIsItsShelvesAndBellsInEveryChannelMode) {
  std::vector<double> hz{100, 200, 400, 700, 1200, 2000, 3500, 6000, 9000, 11000};
  std::vector<double> q{0.7, 1, 2, 0.5, 1.5, 3, 1, 0.8, 2, 0.7};
  std::vector<double> db{3, -4, 2, 5, -6, 1, -2, 4, -3, 2};
  auto response = [&](int64_t offset, double w) {  // offset: the second filter's band values
    Complex h = 1;
    for (int64_t k = 0; k < 10; ++k) {
      std::string shape = k == 0 ? "low_shelf" : k == 9 ? "high_shelf" : "peaking";
      h *= cookbook(shape, hz[k], q[k], db[k] + double(offset), w);
    }
    return h;
  };
  auto mono = make_processor("parametric_eq", {kRate});
  at::Tensor measured =
      measured_db(*mono, raw_parameters(*mono, {{"frequency_hz", hz}, {"q", q}, {"gain_db", db}}));
  for (int c = 0; c < 2; ++c)
    expect_response(
        measured[0][c], [&](double w) { return response(0, w); }, "mono");

  // Stereo and mid/side: the second filter's gains are 1 dB higher.
  auto twice = [](std::vector<double> v, double plus) {
    std::vector<double> out = v;
    for (double x : v) out.push_back(x + plus);
    return out;
  };
  std::map<std::string, std::vector<double>> physical{
      {"frequency_hz", twice(hz, 0)}, {"q", twice(q, 0)}, {"gain_db", twice(db, 1)}};
  auto stereo = make_processor("parametric_eq_stereo", {kRate});
  measured    = measured_db(*stereo, raw_parameters(*stereo, physical));
  expect_response(
      measured[0][0], [&](double w) { return response(0, w); }, "left");
  expect_response(
      measured[0][1], [&](double w) { return response(1, w); }, "right");
  auto midside       = make_processor("parametric_eq_midside", {kRate});
  at::Tensor impulse = at::zeros({1, 2, kLength}, at::kDouble);
  impulse[0][0][0] = 1.0, impulse[0][1][0] = -1.0;  // a side impulse: L = −R
  measured = measured_db(*midside, raw_parameters(*midside, physical), impulse);
  expect_response(
      measured[0][0], [&](double w) { return response(1, w); }, "side");

  // Raw 0 (the initial values) is the identity, and its curve has no curvature.
  TensorDict initial   = raw_parameters(*mono, {});
  at::Tensor x         = at::randn({1, 2, 3000}, at::kDouble);
  ProcessorOutput flat = mono->forward({x}, initial);
  EXPECT_TRUE(at::allclose(flat.outputs[0], x, 0, 1e-12));
  EXPECT_LT(flat.aux_losses.at("eq_curvature").abs().max().item<double>(), 1e-20);

  // The "eq_curvature" regulariser: the mean square second difference of the response in dB on
  // the 1/6-octave grid from 40 Hz to 12 kHz, from the cookbook's formulas; the stereo filter's
  // is the mean of its two filters'.
  auto curvature = [&](int64_t offset) {
    std::vector<double> curve;
    for (double f = 40; f <= 12000 * (1 + 1e-12); f *= std::pow(2.0, 1.0 / 6))
      curve.push_back(20 * std::log10(std::abs(response(offset, 2 * M_PI * f / kRate))));
    double sum = 0;
    for (size_t k = 2; k < curve.size(); ++k)
      sum += std::pow(curve[k] - 2 * curve[k - 1] + curve[k - 2], 2);
    return sum / double(curve.size() - 2);
  };
  auto aux = [&](const Processor& p, const std::map<std::string, std::vector<double>>& values) {
    return p.forward({x}, raw_parameters(p, values)).aux_losses.at("eq_curvature").item<double>();
  };
  const double expected = curvature(0);
  EXPECT_GT(expected, 0.01);
  EXPECT_NEAR(aux(*mono, {{"frequency_hz", hz}, {"q", q}, {"gain_db", db}}), expected,
              1e-9 * expected);
  EXPECT_NEAR(aux(*stereo, physical), (expected + curvature(1)) / 2, 1e-9 * expected);
}

// Its options (GRAFX's num_filters and use_shelving_filters): the bands they choose, each the
// cookbook's filter of its kind, spread from their own starts; no band at all is refused.
TEST(Filters, ParametricEqOptionsChooseItsBands) {
  auto made = [](ProcessorOptions options) {
    return make_processor("parametric_eq", {kRate, std::move(options)});
  };
  struct Case {
    ProcessorOptions options;
    std::vector<std::string> shapes;
  };
  std::vector<Case> cases{
      {{{"bells", 3.0}}, {"low_shelf", "peaking", "peaking", "peaking", "high_shelf"}},
      {{{"bells", 4.0}, {"shelves", false}}, {"peaking", "peaking", "peaking", "peaking"}},
      {{{"bells", 0.0}}, {"low_shelf", "high_shelf"}},
      {{{"bells", 1.0}, {"shelves", false}}, {"peaking"}}};
  for (const Case& c : cases) {
    auto eq         = made(c.options);
    const int64_t n = int64_t(c.shapes.size());
    SCOPED_TRACE(to_json_text(c.options));
    ASSERT_EQ(eq->parameter_specs().front().shape, std::vector<int64_t>{n});
    // The starts: shelves at 80 Hz and 12 kHz, bells evenly spread in log frequency between
    // 150 Hz and 8 kHz (80 Hz and 12 kHz without shelves), one bell alone in the middle.
    const TensorDict initial = raw_parameters(*eq, {});
    at::Tensor start_hz =
        eq->parameter_specs().front().to_physical(initial.at("frequency")).to(at::kDouble)[0];
    const bool shelves  = c.shapes.front() == "low_shelf";
    const int64_t bells = n - (shelves ? 2 : 0);
    const double lo = shelves ? 150 : 80, hi = shelves ? 8000 : 12000;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t bell    = k - (shelves ? 1 : 0);
      const double expected = c.shapes[k] == "low_shelf"    ? 80.0
                              : c.shapes[k] == "high_shelf" ? 12000.0
                              : bells == 1
                                  ? std::sqrt(lo * hi)
                                  : lo * std::pow(hi / lo, double(bell) / double(bells - 1));
      EXPECT_NEAR(start_hz[k].item<double>(), expected, 1e-6 * expected) << "band " << k;
    }
    std::vector<double> hz, q, db;
    for (int64_t k = 0; k < n; ++k) {
      hz.push_back(90 * std::pow(1.9, double(k)));
      q.push_back(0.6 + 0.3 * double(k));
      db.push_back(k % 2 ? -4.0 + double(k) : 5.0 - double(k));
    }
    expect_response(
        measured_db(*eq,
                    raw_parameters(*eq, {{"frequency_hz", hz}, {"q", q}, {"gain_db", db}}))[0][0],
        [&](double w) {
          Complex h = 1;
          for (int64_t k = 0; k < n; ++k) h *= cookbook(c.shapes[k], hz[k], q[k], db[k], w);
          return h;
        },
        "parametric_eq");
  }
  EXPECT_GRAFX_ERROR(made({{"bells", 0.0}, {"shelves", false}}), "grafx.processor.options",
                     "expected at least 1 without shelves");
  EXPECT_GRAFX_ERROR(made({{"bells", 40.0}}), "grafx.processor.options", "bells");
}

TEST(Filters, GraphicEqIsItsLiskiValimakiBands) {
  for (const char* name : {"graphic_eq", "graphic_eq_third_octave"}) {
    auto p         = make_processor(name, {kRate});
    const auto& eq = static_cast<const GraphicEq&>(*p);
    int64_t n      = int64_t(eq.centres_hz().size());
    EXPECT_EQ(n, std::string(name) == "graphic_eq" ? 24 : 31);
    std::vector<double> command_db;
    for (int64_t k = 0; k < n; ++k) command_db.push_back(6 * std::sin(0.7 * double(k)));
    TensorDict raw      = raw_parameters(*p, {{"gain_db", command_db}});
    at::Tensor filter   = eq.filter_gains(raw.at("log_gains"))[0] * (20 / std::log(10.0));
    at::Tensor measured = measured_db(*p, raw)[0][0];
    // The band filters' formula, with the filter gains of the interaction-matrix correction.
    const double c = 0.4;
    expect_response(
        measured,
        [&](double w) {
          Complex h = 1;
          for (int64_t k = 0; k < n; ++k) {
            double db = filter[k].item<double>(), g = std::pow(10.0, db / 20);
            double gc   = std::pow(g, c);
            double rho  = std::abs((1 - gc * gc) / (g * g - gc * gc));
            double beta = std::tan(M_PI * eq.bandwidths_hz()[k] / kRate) * std::sqrt(rho);
            double wc   = 2 * M_PI * eq.centres_hz()[k] / kRate;
            Complex z   = z1(w);
            h *= (1 + g * beta - 2 * std::cos(wc) * z + (1 - g * beta) * z * z) /
                 (1 + beta - 2 * std::cos(wc) * z + (1 - beta) * z * z);
          }
          return h;
        },
        name);
    // The correction's purpose: the response at each centre is close to its command (GRAFX,
    // without it, overshoots ±6 dB commands by up to 4 dB on third-octave bands).
    double worst = 0;
    for (int64_t k = 0; k < n; ++k) {
      int64_t bin = std::lround(eq.centres_hz()[k] * kLength / kRate);
      worst       = std::max(worst, std::abs(measured[bin].item<double>() - command_db[k]));
    }
    EXPECT_LT(worst, 1.0) << name << ": response at the centres against the commands, dB";
    // Flat commands are the identity (b = a: the formula's limit at 0 dB), up to rounding
    // that the narrow low bands amplify.
    at::Tensor x = at::randn({1, 2, 2000}, at::kDouble);
    EXPECT_TRUE(at::allclose(p->forward({x}, raw_parameters(*p, {})).outputs[0], x, 0, 1e-9));
  }
  EXPECT_GRAFX_ERROR(make_processor("graphic_eq", {200}), "grafx.processor.config",
                     "expected a sample rate above 267 Hz");
  // Bands at or above Nyquist are dropped.
  EXPECT_EQ(
      static_cast<const GraphicEq&>(*make_processor("graphic_eq", {16000})).centres_hz().size(),
      21u);
}

TEST(Filters, FirEqTapsAreTheWindowedCosineSumOfTheInterpolatedBands) {
  auto p              = make_processor("fir_eq", {kRate});
  int64_t n_bands     = p->parameter_specs()[0].shape[0];
  at::Tensor log_gain = at::randn({1, n_bands}, at::kDouble) * 0.5;
  at::Tensor impulse  = at::zeros({1, 1, 4095}, at::kDouble);
  impulse[0][0][2047] = 1.0;  // the centre: zero-phase taps land around it
  at::Tensor taps =
      p->forward({impulse}, {{"log_magnitude", log_gain}}).outputs[0][0][0].narrow(0, 1024, 2047);
  // Expected: magnitudes M_k = sqrt(Σ_j w_j(f_k)·e^{2 g_j}) at f_k = k·fs/2047, then
  // h[m] = w_hann[m]·(M_0 + 2·Σ_k M_k·cos(2πkm/2047))/2047 for m = −1023 … 1023.
  at::Tensor hz = at::arange(1024, at::kDouble) * (double(kRate) / 2047);
  at::Tensor w =
      dsp::band_weights(hz, n_bands, dsp::FrequencyScale::kBarkTraunmuller, 40, kRate / 2.0);
  at::Tensor mag      = at::matmul((2 * log_gain).exp(), w).sqrt()[0];
  at::Tensor m        = at::arange(-1023, 1024, at::kDouble);
  at::Tensor k        = at::arange(1, 1024, at::kDouble);
  at::Tensor expected = (mag[0] + 2 * (mag.narrow(0, 1, 1023).unsqueeze(0) *
                                       at::cos(2 * M_PI * m.unsqueeze(1) * k.unsqueeze(0) / 2047))
                                          .sum(1)) /
                        2047 * (0.5 + 0.5 * at::cos(M_PI * m / 1024));
  EXPECT_LT((taps - expected).abs().max().item<double>(), 1e-12);
  // The bands' weights are a partition of unity, so equal gains give a flat response.
  EXPECT_LT((w.sum(0) - 1).abs().max().item<double>(), 1e-12);
}

TEST(Filters, FirEqOptionsGiveOtherScalesWindowsAndChannels) {
  // A type with other options: 20 mel bands from 60 Hz, Blackman window, mid/side.
  FirEqOptions options;
  options.type_name      = "fir_eq_mel_midside";
  options.channels       = EqChannels::kMidSide;
  options.n_bands        = 20;
  options.scale          = dsp::FrequencyScale::kMelHtk;
  options.lowest_band_hz = 60;
  options.window         = dsp::Window::kBlackman;
  FirEqualizer eq({kRate}, options);
  EXPECT_EQ(eq.name(), "fir_eq_mel_midside");
  ASSERT_EQ(eq.parameter_specs()[0].shape, (std::vector<int64_t>{2, 20}));
  at::Tensor x = at::randn({2, 2, 5000}, at::kDouble);
  EXPECT_TRUE(at::allclose(
      eq.forward({x}, {{"log_magnitude", at::zeros({2, 2, 20}, at::kDouble)}}).outputs[0], x, 0,
      1e-12))
      << "flat is the identity";
  // A constant gain on the side filter only: the mid passes, the side is scaled.
  at::Tensor gains = at::zeros({2, 2, 20}, at::kDouble);
  gains.select(1, 1).fill_(std::log(0.5));
  at::Tensor y   = eq.forward({x}, {{"log_magnitude", gains}}).outputs[0];
  at::Tensor mid = (x[0][0] + x[0][1]) / 2, side = (x[0][0] - x[0][1]) / 2;
  EXPECT_TRUE(at::allclose((y[0][0] + y[0][1]) / 2, mid, 0, 1e-9));
  EXPECT_TRUE(at::allclose((y[0][0] - y[0][1]) / 2, side * 0.5, 0, 1e-9));
  EXPECT_GRAFX_ERROR(FirEqualizer({100}, options), "grafx.processor.config", "lowest band");
}

TEST(Filters, FirFilterStartsAsTheIdentityAndConvolvesCausally) {
  auto p           = make_processor("fir_filter", {kRate});
  at::Tensor x     = at::randn({2, 2, 3000}, at::kDouble);
  at::Tensor zeros = at::zeros({2, 1023}, at::kDouble);
  EXPECT_TRUE(at::allclose(p->forward({x}, {{"fir", zeros}}).outputs[0], x, 0, 1e-10));
  at::Tensor raw  = at::randn({2, 1023}, at::kDouble) * 0.1;
  at::Tensor taps = (raw + at::one_hot(at::zeros({2}, at::kLong), 1023).to(at::kDouble)).tanh();
  taps            = taps / taps.pow(2).sum(1, true).add(1e-12).sqrt();
  at::Tensor y    = p->forward({x}, {{"fir", raw}}).outputs[0];
  // y[n] = Σ_k h[k]·x[n − k] at a few samples.
  for (int64_t n : {0, 500, 2999}) {
    int64_t count       = std::min<int64_t>(n + 1, 1023);
    at::Tensor past     = x.narrow(2, n - count + 1, count).flip(2);  // x[n], x[n−1], …
    at::Tensor expected = (past * taps.narrow(1, 0, count).unsqueeze(1)).sum(2);
    EXPECT_LT((y.select(2, n) - expected).abs().max().item<double>(), 1e-10) << n;
  }
}

TEST(Filters, CrossoverBandsAreLinkwitzRileyAndSumToAnAllpass) {
  // 2 bands: LP² and HP² of the cookbook Butterworth sections; their sum is flat within 0.01 dB.
  auto two   = make_processor("crossover", {kRate});
  auto three = make_processor("crossover_3band", {kRate});
  ASSERT_EQ(two->outlets(), (std::vector<std::string>{"low", "high"}));
  ASSERT_EQ(three->outlets(), (std::vector<std::string>{"low", "mid", "high"}));
  at::Tensor impulse = at::zeros({1, 2, kLength}, at::kDouble);
  impulse.select(2, 0).fill_(1.0);
  auto spectra = [&](const Processor& p, const TensorDict& raw) {
    std::vector<at::Tensor> db;
    at::Tensor sum = at::zeros_like(impulse);
    for (const auto& y : p.forward({impulse}, raw).outputs) {
      db.push_back(20 * at::log10(at::fft_rfft(y, kLength, -1).abs())[0][0]);
      sum = sum + y;
    }
    db.push_back(20 * at::log10(at::fft_rfft(sum, kLength, -1).abs())[0][0]);
    return db;
  };
  const double f = 800, q = M_SQRT1_2;
  auto db = spectra(*two, raw_parameters(*two, {{"crossover_hz", {f}}}));
  expect_response(
      db[0], [&](double w) { return std::pow(cookbook("lowpass", f, q, 0, w), 2); }, "low");
  expect_response(
      db[1], [&](double w) { return std::pow(cookbook("highpass", f, q, 0, w), 2); }, "high");
  EXPECT_LT(db[2].abs().max().item<double>(), 0.01) << "the bands' sum is flat";
  int64_t bin = std::lround(f * kLength / kRate);
  EXPECT_NEAR(db[0][bin].item<double>(), -6.02, 0.01) << "each band −6 dB at the crossover";

  // 3 bands: low = AP(f2)·LP(f1)², mid = LP(f2)²·HP(f1)², high = HP(f2)²·HP(f1)².
  const double f1 = 200, f2 = 3000;
  db = spectra(*three, raw_parameters(*three, {{"crossover_hz", {f1, f2}}}));
  expect_response(
      db[0],
      [&](double w) {
        return cookbook("allpass", f2, q, 0, w) * std::pow(cookbook("lowpass", f1, q, 0, w), 2);
      },
      "low");
  expect_response(
      db[1],
      [&](double w) {
        return std::pow(cookbook("lowpass", f2, q, 0, w) * cookbook("highpass", f1, q, 0, w), 2);
      },
      "mid");
  expect_response(
      db[2],
      [&](double w) {
        return std::pow(cookbook("highpass", f2, q, 0, w) * cookbook("highpass", f1, q, 0, w), 2);
      },
      "high");
  EXPECT_LT(db[3].abs().max().item<double>(), 0.01) << "the three bands' sum is flat";
  // Any raw values keep the second frequency above the first.
  at::Tensor raw = at::randn({100, 2}, at::kDouble) * 3;
  at::Tensor hz  = three->parameter_specs()[0].to_physical(raw);
  EXPECT_TRUE((hz.select(1, 1) > hz.select(1, 0)).all().item<bool>());
  EXPECT_TRUE((hz.select(1, 1) < kRate / 2.0).all().item<bool>());
}

TEST(Filters, RandomRawParametersGiveStableFilters) {
  // Wide raw values (extreme frequencies, Q from 0.01 to 100): every IIR type's impulse response
  // stays bounded; an unstable pole would grow past any bound within 2^16 samples.
  at::manual_seed(11);
  for (const char* name :
       {"lowpass", "highpass", "bandpass", "bandreject", "allpass", "peaking", "low_shelf",
        "high_shelf", "biquad", "pole_zero", "state_variable_filter", "parametric_eq", "graphic_eq",
        "crossover_3band"}) {
    auto p             = make_processor(name, {kRate});
    at::Tensor impulse = at::zeros({16, 1, kLength}, at::kDouble);
    impulse.select(2, 0).fill_(1.0);
    TensorDict raw;
    for (const auto& spec : p->parameter_specs())
      raw[spec.name] = (spec.init_mean + 3 * at::randn(spec.shape_for(16), at::kDouble))
                           .clamp(-4.6, 4.6);  // Q within [0.01, 100]
    at::Tensor y = p->forward({impulse}, raw).outputs[0];
    EXPECT_TRUE(y.isfinite().all().item<bool>()) << name;
    at::Tensor tail = y.narrow(2, kLength - 1000, 1000).abs().amax(2);
    EXPECT_LT(tail.max().item<double>(), 1e3) << name;
  }
}

}  // namespace
}  // namespace grafx
