// The streaming form of the compressors and noise gates (processors/compressor.h): the steps of
// Dynamics::forward, sample by sample. No LibTorch here: the LV2 plugin runs this.

#include <grafx/stream/dynamics_form.h>

#include <grafx/dsp/float_math.h>

#include <algorithm>
#include <cmath>

namespace grafx {
namespace {

/// This form's kind in programs, saved first (its number since programs of version 2).
constexpr int32_t kKind = 2;

}  // namespace
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

/// The gain computer's log(gain): s·k(±(log(e + floor) − T), w)/2 for m samples.
template <dsp::Knee kKnee>
void half_log_gains(const float* __restrict levels, const float* __restrict thresholds,
                    const float* __restrict scales, const float* __restrict widths, float sign,
                    float* __restrict half, int64_t m) {
  for (int64_t i = 0; i < m; ++i) {
    const float level = dsp::log_float(levels[i] + float(dsp::kEnergyFloor));
    half[i] =
        scales[i] * dsp::knee_point(kKnee, sign * (level - thresholds[i]), widths[i]).k * 0.5f;
  }
}

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

  // In chunks of kChunk samples, in passes: the recursions (the level's smoother, the gain's)
  // sample by sample, and between them the gain computer, independent per sample, as loops that
  // vectorise (dsp/float_math.h; this file is compiled with -fno-trapping-math, which lets GCC
  // turn their selects into vector blends). The same steps as Dynamics::forward, in its order.
  void process(const InletBuffers& inlets, const OutletBuffers& outlets, int64_t n) override {
    for (int64_t start = 0; start < n; start += kChunk) {
      const int64_t m = std::min(kChunk, n - start);
      detect(inlets.back(), start, m);
      compute_gains(m);
      if (gain_.smooths()) {
        const float unity = form_.log_domain ? 0.0f : 1.0f;
        for (int64_t i = 0; i < m; ++i) gains_[i] = unity - gain_(unity - gains_[i]);
      }
      if (form_.log_domain)
        for (int64_t i = 0; i < m; ++i) gains_[i] = dsp::exp_float(gains_[i]);
      for (size_t c = 0; c < outlets.front().size(); ++c) {
        const float* x = inlets.front()[c] + start;
        float* y       = outlets.front()[c] + start;
        for (int64_t i = 0; i < m; ++i) y[i] = x[i] * gains_[i];
      }
    }
  }

  void reset() override { level_.reset(), gain_.reset(), clock_ = 0; }
  void locate(int64_t clock) override { clock_ = clock; }

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
    out.write(kKind);
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
  static constexpr int64_t kChunk = 64;

  /// The key's level (energy, or amplitude squared) through its smoother, into levels_, and
  /// the threshold, scale and knee width of each sample (gliding, or the threshold's curve).
  void detect(const std::vector<const float*>& key, int64_t start, int64_t m) {
    const float channels = float(key.size());
    for (int64_t i = 0; i < m; ++i) {
      float detected = 0;
      for (const float* k : key)
        detected +=
            form_.amplitude_detection ? std::abs(k[start + i]) : k[start + i] * k[start + i];
      const float envelope = level_(detected / channels);
      levels_[i]           = form_.amplitude_detection ? envelope * envelope : envelope;
      thresholds_[i]       = form_.threshold_curve
                                 ? form_.threshold_curve->at(clock_ - form_.input_latency, 0) -
                                 float(dsp::kThresholdOffset)
                                 : threshold_.next();
      scales_[i] = scale_.next(), widths_[i] = width_.next();
      ++clock_;
    }
  }

  /// The gain computer: gains_ from levels_, log(gain) where it is smoothed in the log domain.
  void compute_gains(int64_t m) {
    const float sign = form_.gate ? -1.0f : 1.0f;  // u = ±(level − T)
    switch (form_.knee) {  // a loop per knee: those of the hard and quadratic ones vectorise
      case dsp::Knee::kHard:
        half_log_gains<dsp::Knee::kHard>(levels_, thresholds_, scales_, widths_, sign, gains_, m);
        break;
      case dsp::Knee::kQuadratic:
        half_log_gains<dsp::Knee::kQuadratic>(levels_, thresholds_, scales_, widths_, sign, gains_,
                                              m);
        break;
      case dsp::Knee::kExponential:
        half_log_gains<dsp::Knee::kExponential>(levels_, thresholds_, scales_, widths_, sign,
                                                gains_, m);
        break;
    }
    if (!form_.log_domain)
      for (int64_t i = 0; i < m; ++i) gains_[i] = dsp::exp_float(gains_[i]);
  }

  DynamicsForm form_;
  Glide threshold_, scale_, width_;  // T, s, w, gliding where a host changes them
  StreamSmoother level_, gain_;
  int64_t glide_, clock_ = 0;
  float levels_[kChunk], thresholds_[kChunk], scales_[kChunk], widths_[kChunk], gains_[kChunk];
};

}  // namespace

std::unique_ptr<NodeStream> dynamics_stream(DynamicsForm form) {
  return std::make_unique<DynamicsStream>(std::move(form));
}

namespace {

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

const bool kRegistered = register_form(kKind, "dynamics", load_dynamics_stream);

}  // namespace

}  // namespace grafx
