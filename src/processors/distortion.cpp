#include <grafx/processors/distortion.h>

#include "processors/units.h"

#include <ATen/ATen.h>

namespace grafx {
namespace {

using Curve = Distortion::Curve;

ProcessorDescriptor distortion_descriptor(Curve curve, char letter, std::string summary,
                                          std::string grafx_name) {
  auto d = ProcessorDescriptor::of<Distortion>(Distortion(ProcessorConfig(), curve).name(), letter,
                                               curve);
  d.summary       = std::move(summary);
  d.grafx_name    = std::move(grafx_name);
  d.response      = ResponsePicture::kStaticCurve;
  d.musical_prior = [curve](const PriorContext& c) {
    auto values  = [](std::vector<double> v) { return at::tensor(v, at::kDouble); };
    Random& r    = c.random;
    TensorDict s = {{"drive_db", values({curve == Curve::kTanh || curve == Curve::kPiecewiseTanh
                                             ? r.uniform(0, 12)
                                             : r.uniform(-6, 0)})}};
    if (curve == Curve::kPiecewiseTanh) {
      s["hardness"]  = values({r.uniform(0.5, 4), r.uniform(0.5, 4)});
      s["threshold"] = values({r.uniform(0.3, 0.8), r.uniform(0.3, 0.8)});
    }
    if (curve == Curve::kPower || curve == Curve::kChebyshev) {
      // Mostly the signal itself, with a little of the low harmonics.
      std::vector<double> w(size_t(Distortion::kOrders), 0.0);
      w[1] = r.uniform(0.7, 0.95);
      for (size_t k = 2; k < 5; ++k) w[k] = r.uniform(-0.1, 0.1);
      s["weight"] = values(w);
    }
    return s;
  };
  return d;
}

}  // namespace

ProcessorDescriptor tanh_distortion_descriptor() {
  return distortion_descriptor(Curve::kTanh, 'w', "tanh distortion: tanh(g·x)/g", "TanhDistortion");
}
ProcessorDescriptor piecewise_tanh_distortion_descriptor() {
  return distortion_descriptor(Curve::kPiecewiseTanh, 'W',
                               "piecewise tanh distortion: tanh with its own hardness beyond a "
                               "threshold on each side (slope-continuous)",
                               "PiecewiseTanhDistortion");
}
ProcessorDescriptor power_distortion_descriptor() {
  return distortion_descriptor(Curve::kPower, 'Z',
                               "power distortion: a polynomial of degree 9 of the pre-gained "
                               "signal, weights tanh(w_k)",
                               "PowerDistortion");
}
ProcessorDescriptor chebyshev_distortion_descriptor() {
  return distortion_descriptor(Curve::kChebyshev, 'J',
                               "Chebyshev distortion: Chebyshev polynomials T_0 … T_9 of the "
                               "pre-gained signal (T_k(cos θ) = cos kθ: harmonic k), weights "
                               "tanh(w_k)",
                               "ChebyshevDistortion");
}

Distortion::Distortion(const ProcessorConfig&, Curve curve) : curve_(curve) {}

std::string Distortion::name() const {
  switch (curve_) {
    case Curve::kTanh:
      return "tanh_distortion";
    case Curve::kPiecewiseTanh:
      return "piecewise_tanh_distortion";
    case Curve::kPower:
      return "power_distortion";
    case Curve::kChebyshev:
      return "chebyshev_distortion";
  }
  return "";
}

std::vector<ParameterSpec> Distortion::parameter_specs() const {
  std::vector<ParameterSpec> specs = {
      ParameterSpec::raw("log_pre_gain", {1})
          .physical("drive_db", "dB", units::log_gain_to_db, units::db_to_log_gain)
          .range(-60, 60)
          .about("gain before the curve (undone after the tanh curves)")};
  if (curve_ == Curve::kPiecewiseTanh) {
    specs.push_back(
        ParameterSpec::raw("log_hardness", {2})
            .physical(
                "hardness", "ratio", [](const at::Tensor& raw) { return raw.exp(); },
                [](const at::Tensor& h) { return h.log(); })
            .range(1e-3, 1e3)
            .about("steepness beyond the threshold, positive and negative side (1: tanh's)"));
    specs.push_back(ParameterSpec::raw("z_threshold", {2})
                        .physical(
                            "threshold", "ratio", [](const at::Tensor& z) { return z.sigmoid(); },
                            [](const at::Tensor& k) { return (k / (1 - k)).log(); })
                        .range(1e-6, 1 - 1e-6)
                        .about("where the curve changes, positive and negative side"));
  }
  if (curve_ == Curve::kPower || curve_ == Curve::kChebyshev)
    specs.push_back(ParameterSpec::raw("basis_weights", {kOrders})
                        .physical(
                            "weight", "ratio", [](const at::Tensor& w) { return w.tanh(); },
                            [](const at::Tensor& t) { return t.atanh(); })
                        .range(-1 + 1e-9, 1 - 1e-9)
                        .about(curve_ == Curve::kPower ? "weight of u^k, k = 0 … 9"
                                                       : "weight of T_k(u), k = 0 … 9"));
  return specs;
}

ProcessorOutput Distortion::forward(const std::vector<at::Tensor>& inputs,
                                    const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const at::Tensor gain = parameters.at("log_pre_gain").exp().unsqueeze(-1);  // [N, 1, 1]
  const at::Tensor u    = inputs[0] * gain;
  switch (curve_) {
    case Curve::kTanh:
      return {{u.tanh() / gain}, {}};
    case Curve::kPiecewiseTanh: {
      auto side = [&](const char* name, int64_t i) {
        return parameters.at(name).select(1, i).view({-1, 1, 1});
      };
      at::Tensor k_pos = side("z_threshold", 0).sigmoid(), k_neg = side("z_threshold", 1).sigmoid();
      at::Tensor h_pos = side("log_hardness", 0).exp(), h_neg = side("log_hardness", 1).exp();
      at::Tensor t_pos = k_pos.tanh(), t_neg = k_neg.tanh();
      at::Tensor above = (1 - t_pos * t_pos) / h_pos * (h_pos * (u - k_pos)).tanh() + t_pos;
      at::Tensor below = (1 - t_neg * t_neg) / h_neg * (h_neg * (u + k_neg)).tanh() - t_neg;
      at::Tensor y     = at::where(u > k_pos, above, at::where(u < -k_neg, below, u.tanh()));
      return {{y / gain}, {}};
    }
    case Curve::kPower:
    case Curve::kChebyshev: {
      const at::Tensor w  = parameters.at("basis_weights").tanh().unsqueeze(-1);  // [N, K, 1]
      at::Tensor previous = at::ones_like(u), current = u;  // T_0 (or u^0) and T_1 (or u^1)
      at::Tensor y = w.narrow(1, 0, 1) * previous + w.narrow(1, 1, 1) * current;
      for (int64_t k = 2; k < kOrders; ++k) {
        at::Tensor next = curve_ == Curve::kPower ? current * u : 2 * u * current - previous;
        y               = y + w.narrow(1, k, 1) * next;
        previous        = current;
        current         = next;
      }
      return {{y}, {}};
    }
  }
  return {};
}

}  // namespace grafx
