#pragma once
// Unit conversions and checks shared by processors (private to the library).

#include <grafx/dsp/biquad.h>
#include <grafx/dsp/convolution.h>
#include <grafx/dsp/signal.h>
#include <grafx/error.h>
#include <grafx/processors/options.h>
#include <grafx/processors/processor.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace grafx::units {

/// The temporal support of biquad cascades with denominators `a` ([..., K, 3]): the time their
/// impulse responses take to decay.
inline TemporalSupport biquad_support(const at::Tensor& a) {
  return TemporalSupport::causal(dsp::cascade_decay_samples(a, TemporalSupport::kDecayTolerance));
}

/// Natural-log gain to decibels: 20·log10(e^g) = g·20/ln 10.
inline at::Tensor log_gain_to_db(const at::Tensor& log_gain) {
  return log_gain * (20.0 / std::log(10.0));
}

/// Decibels to natural-log gain, the inverse of log_gain_to_db.
inline at::Tensor db_to_log_gain(const at::Tensor& db) { return db * (std::log(10.0) / 20.0); }

/// Frequencies on a log scale between `lo_hz` and `hi_hz`: f = lo·(hi/lo)^σ(raw + offset), with
/// one offset per element of the last dimension so that raw 0 is `initial_hz` there (one value
/// for all, or one per element). Every raw value is a valid frequency strictly inside the range.
struct LogFrequency {
  double lo_hz, hi_hz;
  std::vector<double> offsets;

  LogFrequency(double lo, double hi, const std::vector<double>& initial_hz) : lo_hz(lo), hi_hz(hi) {
    for (double f : initial_hz) offsets.push_back(logit(position(f)));
  }
  static double logit(double p) { return std::log(p / (1 - p)); }
  /// Where f lies on the scale: 0 at lo_hz, 1 at hi_hz.
  double position(double hz) const { return std::log(hz / lo_hz) / std::log(hi_hz / lo_hz); }
  at::Tensor position(const at::Tensor& hz) const {
    return at::log(hz / lo_hz) / std::log(hi_hz / lo_hz);
  }
  at::Tensor hz_at(const at::Tensor& position) const {
    return lo_hz * at::pow(hi_hz / lo_hz, position);
  }
  at::Tensor offset(const at::Tensor& like) const {
    return at::tensor(offsets, like.options().dtype(at::kDouble)).to(like.scalar_type());
  }
  at::Tensor to_hz(const at::Tensor& raw) const { return hz_at((raw + offset(raw)).sigmoid()); }
  at::Tensor to_raw(const at::Tensor& hz) const { return position(hz).logit() - offset(hz); }
};

/// A frequency parameter on a LogFrequency scale from 5 Hz to Nyquist (initial values clamped
/// below 0.45·fs); users may set 10 Hz to 0.499·fs.
inline ParameterSpec frequency_spec(const std::string& raw_name, const std::string& physical_name,
                                    std::vector<int64_t> shape, SampleRate sample_rate,
                                    std::vector<double> initial_hz) {
  for (double& f : initial_hz) f = std::min(f, 0.45 * double(sample_rate));
  LogFrequency scale(5.0, 0.5 * double(sample_rate), initial_hz);
  return ParameterSpec::raw(raw_name, std::move(shape))
      .physical(
          physical_name, "Hz", [scale](const at::Tensor& raw) { return scale.to_hz(raw); },
          [scale](const at::Tensor& hz) { return scale.to_raw(hz); })
      .range(10.0, 0.499 * double(sample_rate))
      .maps(
          "5·(sr/10)^σ(raw + offset) Hz, the offset putting raw 0 at the initial frequency: "
          "every raw value is a frequency between 5 Hz and Nyquist");
}

/// Frequencies in Hz to rad/sample.
inline at::Tensor omega(const at::Tensor& hz, SampleRate sample_rate) {
  return hz * (2 * M_PI / double(sample_rate));
}

/// A filter's Q, q = e^{raw}, initially `initial_q`.
inline ParameterSpec q_spec(std::vector<int64_t> shape, double initial_q) {
  return ParameterSpec::raw("log_q", std::move(shape))
      .initial(std::log(initial_q))
      .physical(
          "q", "", [](const at::Tensor& raw) { return raw.exp(); },
          [](const at::Tensor& q) { return q.log(); })
      .range(0.01, 100.0)
      .maps("e^raw");
}

/// A gain in dB stored as a natural-log gain (log_gain_to_db), initially 0 dB.
inline ParameterSpec gain_spec(std::string raw_name, std::vector<int64_t> shape) {
  return ParameterSpec::raw(std::move(raw_name), std::move(shape))
      .physical("gain_db", "dB", log_gain_to_db, db_to_log_gain)
      .range(-60.0, 60.0)
      .maps("natural log of the gain (dB = 8.69·raw)");
}

/// A duration in samples at the configured sample rate; throws ProcessorError
/// [grafx.processor.config] unless the sample rate is positive and the duration has at least
/// `minimum` samples.
inline int64_t samples(double seconds, const ProcessorConfig& config, const std::string& processor,
                       const std::string& what, int64_t minimum) {
  SampleRate rate = config.sample_rate;
  int64_t n       = rate > 0 ? int64_t(std::llround(seconds * double(rate))) : 0;
  if (n < minimum)
    throw ProcessorError("grafx.processor.config",
                         processor + ": expected a sample rate giving a " + what + " of at least " +
                             std::to_string(minimum) + " samples, but got " + std::to_string(rate) +
                             " Hz");
  return n;
}

/// Throws ProcessorError unless x (N×C×L) is mono or stereo.
inline void check_mono_or_stereo(const at::Tensor& x, const std::string& processor) {
  if (x.size(1) != 1 && x.size(1) != 2)
    throw ProcessorError("grafx.processor.inputs",
                         processor +
                             ": expected a mono or stereo (N×1×L or N×2×L) input, but got " +
                             std::to_string(x.size(1)) + " channels");
}

/// x as a stereo signal N×2×L: a mono input is spread to both channels (a mono signal is its
/// dual-mono stereo, so a processor gives the same result for either; the renderers rely on
/// this). Throws ProcessorError for more than two channels.
inline at::Tensor as_stereo(const at::Tensor& x, const std::string& processor) {
  check_mono_or_stereo(x, processor);
  return x.size(1) == 1 ? x.expand({x.size(0), 2, x.size(2)}) : x;
}

/// The option `channels` with these choices (names as GRAFX's: mono, stereo, midside,
/// pseudo_midside), described by these alone: a type that refuses pseudo_midside (delay,
/// filtered_noise_reverb) must not list it.
inline OptionSpec impulse_layout_option(const std::string& default_choice,
                                        std::vector<std::string> choices) {
  auto meaning = [](const std::string& choice) -> std::string {
    if (choice == "mono") return "one on every channel (mono)";
    if (choice == "stereo") return "one per channel (stereo)";
    if (choice == "midside") return "on the input's mid and side (midside)";
    return "a mid/side pair turned into left/right (pseudo_midside)";
  };
  std::string about = "impulse responses: ";
  for (size_t i = 0; i < choices.size(); ++i)
    about += (i == 0 ? "" : i + 1 == choices.size() ? ", or " : ", ") + meaning(choices[i]);
  return OptionSpec::choice("channels", default_choice, std::move(choices), about);
}

inline dsp::ImpulseLayout impulse_layout(const ProcessorOptions& options) {
  const std::string& choice = option_choice(options, "channels");
  if (choice == "mono") return dsp::ImpulseLayout::kMono;
  if (choice == "stereo") return dsp::ImpulseLayout::kStereo;
  if (choice == "midside") return dsp::ImpulseLayout::kMidSide;
  return dsp::ImpulseLayout::kPseudoMidSide;
}

/// Causal responses h (N×R×K) with a node's dry/wet mix folded in, w·h + (1 − w)·δ for wet
/// amounts w (N×1×1): every layout of convolve_impulse_responses then puts out
/// w·f(x) + (1 − w)·x (its channel matrices are linear and invert each other), and the mix costs
/// a pass over the responses, not two over the signal each way.
inline at::Tensor with_dry_path(const at::Tensor& h, const at::Tensor& wet) {
  at::Tensor mixed = h * wet;
  mixed.narrow(-1, 0, 1).add_(1 - wet);
  return mixed;
}

/// x (N×C×L) through normalised responses h (dsp::normalized_impulse_responses): a mono
/// response on every channel (the output has the input's channels); otherwise a stereo output.
inline at::Tensor convolve_impulse_responses(const at::Tensor& x, const at::Tensor& h,
                                             dsp::ImpulseLayout layout,
                                             const std::string& processor) {
  if (layout == dsp::ImpulseLayout::kMono)
    return dsp::convolve(x, h, dsp::ConvolutionMode::kCausal);
  at::Tensor stereo = as_stereo(x, processor);
  if (layout == dsp::ImpulseLayout::kMidSide)
    return dsp::from_mid_side(
        dsp::convolve(dsp::to_mid_side(stereo), h, dsp::ConvolutionMode::kCausal));
  return dsp::convolve(stereo, h, dsp::ConvolutionMode::kCausal);
}

}  // namespace grafx::units
