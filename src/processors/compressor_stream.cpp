// The streaming form of the compressors and noise gates (processors/compressor.h): the steps of
// Dynamics::forward, sample by sample. No LibTorch here: the LV2 plugin runs this.

#include "processors/stream_forms.h"

#include <cmath>

namespace grafx {
namespace {

const double kLogEnergyToDb = 10.0 / std::log(10.0);

/// A smoother of one value per sample, as dsp::one_pole and dsp::ballistics run it on a row:
/// from 0 (a gain smoother runs on the gain's distance from its unity).
class StreamSmoother {
 public:
  explicit StreamSmoother(const DynamicsForm::Smoother& form) : form_(form) {}
  float operator()(float x) {
    if (form_.kind == dsp::EnvelopeSmoothing::kOnePole)
      return state_ = form_.alpha * state_ + x * (1 - form_.alpha);
    if (form_.kind == dsp::EnvelopeSmoothing::kBallistics)
      return state_ = dsp::ballistics_step(state_, x, form_.gain_rise, form_.gain_fall);
    return x;
  }
  void reset() { state_ = 0; }
  bool smooths() const { return form_.kind != dsp::EnvelopeSmoothing::kNone; }
  /// New coefficients (a change of time constant, which clicks no more than the level does).
  void set_alpha(float alpha) { form_.alpha = alpha; }
  void set_attack(float alpha) { form_.gain_rise = 1 - alpha; }
  void set_release(float alpha) { form_.gain_fall = 1 - alpha; }

 private:
  DynamicsForm::Smoother form_;
  float state_ = 0;
};

/// A Dynamics node, sample by sample: the steps of Dynamics::forward in the same order.
class DynamicsStream : public NodeStream {
 public:
  explicit DynamicsStream(DynamicsForm form)
      : form_(std::move(form)),
        threshold_(form_.threshold),
        scale_(form_.scale),
        width_(form_.width),
        level_(form_.level),
        gain_(form_.gain),
        glide_(glide_samples(form_.sample_rate)) {
    controls_ = form_.controls;
    if (form_.threshold_curve) followed_curves_ = {"log_threshold"};
  }

  std::vector<int64_t> outlet_channels() const override { return {form_.channels}; }

  void process(const InletBuffers& inlets, const OutletBuffers& outlets, int64_t n) override {
    const auto &x = inlets.front(), &key = inlets.back();
    const auto& y        = outlets.front();
    const float channels = float(key.size());
    for (int64_t i = 0; i < n; ++i) {
      float detected = 0;
      for (const float* k : key)
        detected += form_.amplitude_detection ? std::abs(k[i]) : k[i] * k[i];
      float envelope = level_(detected / channels);
      if (form_.amplitude_detection) envelope = envelope * envelope;
      const float level     = std::log(envelope + float(dsp::kEnergyFloor));
      const float threshold = form_.threshold_curve
                                  ? form_.threshold_curve->at(clock_ - form_.input_latency, 0) -
                                        float(dsp::kThresholdOffset)
                                  : threshold_.next();
      const float scale     = scale_.next();
      const float u         = form_.gate ? threshold - level : level - threshold;
      const float k         = dsp::knee_point(form_.knee, u, width_.next()).k;
      const float gain      = form_.log_domain ? std::exp(smoothed_gain(scale * k / 2, 0))
                                               : smoothed_gain(std::exp(scale * k * 0.5f), 1);
      for (size_t c = 0; c < y.size(); ++c) y[c][i] = x[c][i] * gain;
      ++clock_;
    }
  }

  void reset() override { level_.reset(), gain_.reset(), clock_ = 0; }

  void apply_control(size_t index, double value) override {
    using Control = DynamicsForm::Control;
    // A smoother's time constant: alpha = exp(−1000 / (rate · ms)).
    const float alpha =
        float(std::min(std::exp(-1000 / (double(form_.sample_rate) * value)), dsp::kMaxAlpha));
    switch (form_.sets[index]) {
      case Control::kThreshold:
        return threshold_.to(float(value / kLogEnergyToDb), glide_);
      case Control::kRatio:
        return scale_.to(float(dsp::curve_scale(value, form_.gate)), glide_);
      case Control::kKnee:
        return width_.to(float(form_.knee == dsp::Knee::kQuadratic ? value / kLogEnergyToDb / 2
                                                                   : kLogEnergyToDb / value),
                         glide_);
      case Control::kLevelOnePole:
        return level_.set_alpha(alpha);
      case Control::kLevelAttack:
        return level_.set_attack(alpha);
      case Control::kLevelRelease:
        return level_.set_release(alpha);
      case Control::kGainOnePole:
        return gain_.set_alpha(alpha);
      case Control::kGainAttack:
        return gain_.set_attack(alpha);
      case Control::kGainRelease:
        return gain_.set_release(alpha);
    }
  }

  void save(StreamWriter& out) const override {
    const DynamicsForm& f = form_;
    out.write(NodeStreamKind::kDynamics);
    out.write(f.gate), out.write(f.amplitude_detection), out.write(f.log_domain);
    out.write(f.knee), out.write(f.threshold), out.write(f.scale), out.write(f.width);
    for (const DynamicsForm::Smoother& s : {f.level, f.gain})
      out.write(s.kind), out.write(s.alpha), out.write(s.gain_rise), out.write(s.gain_fall);
    out.write(f.channels), out.write(f.sample_rate);
    write_controls(out, f.controls);
    out.write(f.sets);
    StreamCurve::save(out, f.threshold_curve);
    out.write(f.input_latency);
  }

 private:
  /// smooth_gain's value: negated around its unity, a falling gain rises, and ballistics'
  /// attack applies (one pole is symmetric, so the same).
  float smoothed_gain(float gain, float unity) {
    return gain_.smooths() ? unity - gain_(unity - gain) : gain;
  }

  DynamicsForm form_;
  Glide threshold_, scale_, width_;  // T, s, w, gliding where a host changes them
  StreamSmoother level_, gain_;
  int64_t glide_, clock_ = 0;
};

}  // namespace

std::unique_ptr<NodeStream> dynamics_stream(DynamicsForm form) {
  return std::make_unique<DynamicsStream>(std::move(form));
}

std::unique_ptr<NodeStream> load_dynamics_stream(StreamReader& in, int64_t) {
  DynamicsForm f;
  f.gate = in.read<bool>(), f.amplitude_detection = in.read<bool>();
  f.log_domain = in.read<bool>();
  f.knee       = in.read<dsp::Knee>();
  f.threshold = in.read<float>(), f.scale = in.read<float>(), f.width = in.read<float>();
  for (DynamicsForm::Smoother* s : {&f.level, &f.gain}) {
    s->kind  = in.read<dsp::EnvelopeSmoothing>();
    s->alpha = in.read<float>(), s->gain_rise = in.read<float>(), s->gain_fall = in.read<float>();
  }
  f.channels    = in.read_count(1, 8);
  f.sample_rate = in.read_count(1, 1 << 24);
  f.controls    = read_controls(in);
  f.sets        = in.read_vector<DynamicsForm::Control>();
  if (f.sets.size() != f.controls.size()) in.corrupt("controls of dynamics without their roles");
  for (DynamicsForm::Control c : f.sets)
    if (int32_t(c) < 0 || c > DynamicsForm::Control::kGainRelease)
      in.corrupt("a control of dynamics of no role");
  if (int32_t(f.knee) < 0 || f.knee > dsp::Knee::kExponential) in.corrupt("an unknown knee");
  for (const DynamicsForm::Smoother& s : {f.level, f.gain})
    if (int32_t(s.kind) < 0 || s.kind > dsp::EnvelopeSmoothing::kNone)
      in.corrupt("an unknown smoother");
  f.threshold_curve = StreamCurve::load(in);
  f.input_latency   = in.read_count(0, int64_t(1) << 40);
  return dynamics_stream(std::move(f));
}

}  // namespace grafx
