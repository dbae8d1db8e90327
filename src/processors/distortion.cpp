#include <grafx/error.h>
#include <grafx/processors/distortion.h>

#include <grafx/stream/waveshaper_form.h>

#include "processors/units.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

namespace grafx {
namespace {

using Curve = Distortion::Curve;

ProcessorDescriptor distortion_descriptor(Curve curve, char letter, std::string summary,
                                          std::string grafx_name) {
  auto d = ProcessorDescriptor::of<Distortion>(Distortion(ProcessorConfig(), curve).name(), letter,
                                               curve);
  d.summary       = std::move(summary);
  d.grafx_name    = std::move(grafx_name);
  d.options       = Distortion::option_specs(curve);
  d.response      = ResponsePicture::kStaticCurve;
  d.musical_prior = [curve](const PriorContext& c) {
    auto values     = [](std::vector<double> v) { return at::tensor(v, at::kDouble); };
    Random& r       = c.random;
    const bool tanh = curve == Curve::kTanh || curve == Curve::kPiecewiseTanh;
    TensorDict s;
    for (const auto& spec : c.processor.parameter_specs()) {
      if (spec.physical_name == "drive_db")
        s["drive_db"] = values({tanh ? r.uniform(0, 12) : r.uniform(-6, 0)});
      if (spec.physical_name == "output_gain_db") s["output_gain_db"] = values({r.uniform(-12, 0)});
      if (spec.physical_name == "bias") s["bias"] = values({r.uniform(-0.3, 0.3)});
    }
    if (curve == Curve::kPiecewiseTanh) {
      s["hardness"]  = values({r.uniform(0.5, 4), r.uniform(0.5, 4)});
      s["threshold"] = values({r.uniform(0.3, 0.8), r.uniform(0.3, 0.8)});
    }
    if (curve == Curve::kPower || curve == Curve::kChebyshev) {
      // Mostly the signal itself, with a little of the low harmonics.
      std::vector<double> w(size_t(c.processor.parameter_specs().back().shape[0]), 0.0);
      w[1] = r.uniform(0.7, 0.95);
      for (size_t k = 2; k < std::min<size_t>(5, w.size()); ++k) w[k] = r.uniform(-0.1, 0.1);
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

std::vector<OptionSpec> Distortion::option_specs(Curve curve) {
  const OptionSpec remove_dc =
      OptionSpec::flag("remove_dc", false, "subtract each channel's mean over the signal first");
  if (curve == Curve::kTanh || curve == Curve::kPiecewiseTanh) {
    std::vector<OptionSpec> specs = {
        OptionSpec::flag("pre_post_gain", true, "learn a gain before the curve"),
        OptionSpec::flag("inverse_post_gain", true,
                         "undo the pre-gain after the curve; false: learn an output gain"),
        remove_dc};
    if (curve == Curve::kTanh)
      specs.push_back(OptionSpec::flag("use_bias", false,
                                       "learn a bias: tanh(u + b) - tanh(b) (even harmonics)"));
    return specs;
  }
  return {OptionSpec::flag("pre_gain", true, "learn a gain before the polynomial"),
          OptionSpec::integer("max_order", kOrders, 2, 20, "number of terms (orders 0 to K - 1)"),
          OptionSpec::flag("use_tanh", false, "squash each term with tanh"), remove_dc};
}

Distortion::Distortion(const ProcessorConfig& config, Curve curve) : curve_(curve) {
  ProcessorOptions options = resolve_options(option_specs(curve), config.options);
  remove_dc_               = option_flag(options, "remove_dc");
  if (tanh_curve()) {
    pre_gain_      = option_flag(options, "pre_post_gain");
    own_post_gain_ = pre_gain_ && !option_flag(options, "inverse_post_gain");
    bias_          = curve == Curve::kTanh && option_flag(options, "use_bias");
    squash_terms_  = false;
  } else {
    pre_gain_      = option_flag(options, "pre_gain");
    own_post_gain_ = bias_ = false;
    squash_terms_          = option_flag(options, "use_tanh");
    orders_                = int64_t(option_number(options, "max_order"));
  }
}

TemporalSupport Distortion::temporal_support(const TensorDict&) const {
  // The mean of the whole signal: every sample depends on all others.
  if (remove_dc_) return {TemporalSupport::kUnbounded, TemporalSupport::kUnbounded};
  return TemporalSupport::pointwise();
}

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
  std::vector<ParameterSpec> specs;
  if (pre_gain_)
    specs.push_back(ParameterSpec::raw("log_pre_gain", {1})
                        .physical("drive_db", "dB", units::log_gain_to_db, units::db_to_log_gain)
                        .range(-60, 60)
                        .about(tanh_curve() && !own_post_gain_
                                   ? "gain before the curve (undone after it)"
                                   : "gain before the curve"));
  if (own_post_gain_)
    specs.push_back(
        ParameterSpec::raw("log_post_gain", {1})
            .physical("output_gain_db", "dB", units::log_gain_to_db, units::db_to_log_gain)
            .range(-60, 60)
            .about("gain after the curve"));
  if (bias_)
    specs.push_back(ParameterSpec::raw("bias", {1})
                        .physical("bias", "")
                        .about("offset before the curve, its output at zero removed"));
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
  if (!tanh_curve()) {
    const std::string last = std::to_string(orders_ - 1);
    specs.push_back(ParameterSpec::raw("basis_weights", {orders_})
                        .physical(
                            "weight", "ratio", [](const at::Tensor& w) { return w.tanh(); },
                            [](const at::Tensor& t) { return t.atanh(); })
                        .range(-1 + 1e-9, 1 - 1e-9)
                        .about(curve_ == Curve::kPower ? "weight of u^k, k = 0 … " + last
                                                       : "weight of T_k(u), k = 0 … " + last));
  }
  return specs;
}

ProcessorOutput Distortion::forward(const std::vector<at::Tensor>& inputs,
                                    const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  at::Tensor x = inputs[0];
  if (remove_dc_) x = x - x.mean(-1, true);
  // [N, 1, 1] gains; without a learned pre-gain, g = 1.
  auto gain_of          = [&](const char* name) { return parameters.at(name).exp().unsqueeze(-1); };
  const at::Tensor gain = pre_gain_ ? gain_of("log_pre_gain") : at::ones({1, 1, 1}, x.options());
  const at::Tensor u    = x * gain;
  at::Tensor y;
  switch (curve_) {
    case Curve::kTanh:
      if (bias_) {
        at::Tensor b = parameters.at("bias").unsqueeze(-1);
        y            = (u + b).tanh() - b.tanh();
      } else {
        y = u.tanh();
      }
      break;
    case Curve::kPiecewiseTanh: {
      auto side = [&](const char* name, int64_t i) {
        return parameters.at(name).select(1, i).view({-1, 1, 1});
      };
      at::Tensor k_pos = side("z_threshold", 0).sigmoid(), k_neg = side("z_threshold", 1).sigmoid();
      at::Tensor h_pos = side("log_hardness", 0).exp(), h_neg = side("log_hardness", 1).exp();
      at::Tensor t_pos = k_pos.tanh(), t_neg = k_neg.tanh();
      at::Tensor above = (1 - t_pos * t_pos) / h_pos * (h_pos * (u - k_pos)).tanh() + t_pos;
      at::Tensor below = (1 - t_neg * t_neg) / h_neg * (h_neg * (u + k_neg)).tanh() - t_neg;
      y                = at::where(u > k_pos, above, at::where(u < -k_neg, below, u.tanh()));
      break;
    }
    case Curve::kPower:
    case Curve::kChebyshev: {
      const at::Tensor w  = parameters.at("basis_weights").tanh().unsqueeze(-1);  // [N, K, 1]
      auto term           = [&](const at::Tensor& t) { return squash_terms_ ? t.tanh() : t; };
      at::Tensor previous = at::ones_like(u), current = u;  // T_0 (or u^0) and T_1 (or u^1)
      y = w.narrow(1, 0, 1) * term(previous) + w.narrow(1, 1, 1) * term(current);
      for (int64_t k = 2; k < orders_; ++k) {
        at::Tensor next = curve_ == Curve::kPower ? current * u : 2 * u * current - previous;
        y               = y + w.narrow(1, k, 1) * term(next);
        previous        = current;
        current         = next;
      }
      return {{y}, {}};
    }
  }
  if (own_post_gain_) return {{y * gain_of("log_post_gain")}, {}};
  return {{pre_gain_ ? y / gain : y}, {}};
}

std::unique_ptr<NodeStream> Distortion::make_stream(const TensorDict& parameters,
                                                    const StreamSetup& setup) const {
  if (remove_dc_)
    throw ProcessorError("grafx.stream.unsupported",
                         "processor \"" + name() +
                             "\" with remove_dc subtracts the mean of the whole signal, which "
                             "a stream has not heard yet");
  TensorDict raw;  // float32, as the offline render computes its constants
  for (const auto& [name, value] : parameters) raw[name] = value.to(at::kFloat).reshape({-1});
  WaveshaperForm f;
  static_assert(int(Curve::kChebyshev) == int(WaveshaperForm::Curve::kChebyshev));
  f.curve        = WaveshaperForm::Curve(int(curve_));
  f.squash_terms = squash_terms_, f.bias = bias_, f.pre_gain = pre_gain_;
  f.own_post_gain = own_post_gain_;
  if (bias_) {
    f.b      = raw.at("bias").item<float>();
    f.tanh_b = raw.at("bias").tanh().item<float>();
  }
  if (curve_ == Curve::kPiecewiseTanh)
    for (int side = 0; side < 2; ++side) {
      const at::Tensor k = raw.at("z_threshold")[side].sigmoid();
      f.k[side]          = k.item<float>();
      f.h[side]          = raw.at("log_hardness")[side].exp().item<float>();
      f.t[side]          = k.tanh().item<float>();
    }
  if (!tanh_curve()) {
    const at::Tensor w = raw.at("basis_weights").tanh().contiguous();
    f.weights.assign(w.data_ptr<float>(), w.data_ptr<float>() + w.numel());
  }
  auto gain = [&](const char* name) {
    return raw.count(name) ? raw.at(name).exp().item<float>() : 1.0f;
  };
  f.pre_gain_value  = gain("log_pre_gain");
  f.post_gain_value = gain("log_post_gain");
  f.channels        = setup.inlet_channels.front();
  f.sample_rate     = setup.sample_rate;
  for (const ParameterSpec& spec : parameter_specs())
    if (spec.physical_name == "drive_db" || spec.physical_name == "output_gain_db")
      f.controls.push_back(stream_control(spec, parameters.at(spec.name), 0, -60, 60));
  return waveshaper_stream(std::move(f));
}

}  // namespace grafx
