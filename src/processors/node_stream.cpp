#include <grafx/dsp/stream_convolution.h>
#include <grafx/error.h>
#include <grafx/processors/node_stream.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>

namespace grafx {
namespace {

/// A node's impulse responses as one convolver matrix: its inputs are the inlets' channels in
/// order, its outputs the outlets' (each input transformed once, each output once).
class ImpulseResponseStream : public NodeStream {
 public:
  ImpulseResponseStream(dsp::StreamConvolverMatrix convolver, std::vector<int64_t> outlet_channels,
                        int64_t latency)
      : convolver_(std::move(convolver)),
        outlet_channels_(std::move(outlet_channels)),
        latency_(latency),
        inputs_(size_t(convolver_.n_inputs())),
        outputs_(size_t(convolver_.n_outputs())) {}

  std::vector<int64_t> outlet_channels() const override { return outlet_channels_; }
  int64_t latency_samples() const override { return latency_; }

  void process(const InletBuffers& inlets, const OutletBuffers& outlets, int64_t n) override {
    size_t k = 0;
    for (const auto& inlet : inlets)
      for (const float* channel : inlet) inputs_[k++] = channel;
    k = 0;
    for (const auto& outlet : outlets)
      for (float* channel : outlet) outputs_[k++] = channel;
    convolver_.process(inputs_.data(), outputs_.data(), n);
  }
  void reset() override { convolver_.reset(); }

 private:
  dsp::StreamConvolverMatrix convolver_;
  std::vector<int64_t> outlet_channels_;
  int64_t latency_;
  std::vector<const float*> inputs_;  // pointers of the block being processed
  std::vector<float*> outputs_;
};

}  // namespace

std::unique_ptr<NodeStream> stream_by_impulse_responses(const Processor& processor,
                                                        const TensorDict& parameters,
                                                        const StreamSetup& setup) {
  auto refuse = [&](const std::string& why) {
    throw ProcessorError("grafx.stream.unsupported",
                         "processor \"" + processor.name() + "\": " + why);
  };
  c10::NoGradGuard no_grad;
  // In float32, as the offline render of float32 audio: a filter's coefficients rounded as
  // there, a delay's taps where its argmax falls there.
  TensorDict raw;
  for (const auto& [name, value] : parameters) raw[name] = value.to(at::kFloat);
  const TemporalSupport support = processor.temporal_support(raw);
  const int64_t minute          = 60 * int64_t(setup.sample_rate);
  if (support.past_samples > minute || support.future_samples > minute)
    refuse("its impulse response lasts over a minute (or never decays), too long to stream");
  const int64_t length   = support.past_samples + support.future_samples + 1;
  const int64_t channels = setup.inlet_channels.empty() ? 1 : setup.inlet_channels.front();
  const int64_t n_inlets = int64_t(processor.inlets().size());
  const int64_t rows     = n_inlets * channels;  // one impulse per inlet channel
  std::vector<at::Tensor> impulses;
  for (int64_t inlet = 0; inlet < n_inlets; ++inlet) {
    at::Tensor x = at::zeros({rows, channels, length}, at::kFloat);
    for (int64_t c = 0; c < channels; ++c) x[inlet * channels + c][c][support.future_samples] = 1;
    impulses.push_back(x);
  }
  for (auto& [name, value] : raw) {
    std::vector<int64_t> shape(value.sizes().begin(), value.sizes().end());
    shape[0] = rows;
    value    = value.expand(shape).contiguous();
  }
  const ProcessorOutput responses = processor.forward(impulses, raw);

  std::vector<dsp::StreamConvolverMatrix::Path> paths;
  std::vector<int64_t> outlet_channels;
  int64_t output = 0;  // index of the outlet channel among all outlets'
  for (const at::Tensor& outlet : responses.outputs) {
    const at::Tensor y = outlet.contiguous();  // [rows, outlet channels, length]
    outlet_channels.push_back(y.size(1));
    for (int64_t d = 0; d < y.size(1); ++d, ++output)
      for (int64_t r = 0; r < rows; ++r) {
        const float* h = y[r][d].data_ptr<float>();
        int64_t taps   = length;
        while (taps > 0 && h[taps - 1] == 0) --taps;  // exact zeros only: alignment is kept
        if (taps > 0)                                 // else no path (a mid/side or stereo matrix)
          paths.push_back({r, output, std::vector<float>(h, h + taps)});
      }
  }
  return std::make_unique<ImpulseResponseStream>(
      dsp::StreamConvolverMatrix(rows, output, paths, setup.max_block, setup.phase),
      outlet_channels, support.future_samples);
}

namespace {

class MatrixStream : public NodeStream {
 public:
  MatrixStream(int64_t n_inputs, int64_t n_outputs, std::vector<StreamControl> controls,
               void (*matrix_of)(const double*, float*), const StreamSetup& setup,
               const std::string& raw_name, double (*physical_of_raw)(double))
      : n_inputs_(n_inputs),
        n_outputs_(n_outputs),
        channels_(setup.inlet_channels.front()),
        glide_samples_(glide_samples(setup.sample_rate)),
        matrix_of_(matrix_of),
        values_(controls.size()),
        targets_(size_t(n_inputs * n_outputs)) {
    controls_ = std::move(controls);
    for (size_t i = 0; i < controls_.size(); ++i) values_[i] = controls_[i].value;
    matrix_of_(values_.data(), targets_.data());
    for (float entry : targets_) entries_.emplace_back(entry);
    auto curve = setup.curves.find(raw_name);
    if (curve != setup.curves.end()) {  // the values follow the curve, not a host
      curve_           = curve->second;
      physical_of_raw_ = physical_of_raw;
      input_latency_   = setup.input_latency;
      followed_curves_ = {raw_name};
      controls_.clear();
    }
  }

  std::vector<int64_t> outlet_channels() const override {
    return {scalar() ? channels_ : n_outputs_};
  }

  void process(const InletBuffers& inlets, const OutletBuffers& outlets, int64_t n) override {
    const auto& x = inlets.front();
    if (curve_) return process_automated(x, outlets.front(), n);
    if (scalar()) {  // one gain on every channel
      Glide& gain = entries_.front();
      for (int64_t i = 0; i < n; ++i) {
        const float g = gain.next();
        for (size_t c = 0; c < x.size(); ++c) outlets.front()[c][i] = g * x[c][i];
      }
      return;
    }
    const int64_t last_input = int64_t(x.size()) - 1;  // mono read as dual mono
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < n_outputs_; ++o) {
        float sum = 0;
        for (int64_t c = 0; c < n_inputs_; ++c)
          sum += entries_[size_t(o * n_inputs_ + c)].next() * x[size_t(std::min(c, last_input))][i];
        outlets.front()[size_t(o)][i] = sum;
      }
  }
  void reset() override { clock_ = 0; }
  void apply_control(size_t index, double value) override {
    values_[index] = value;
    matrix_of_(values_.data(), targets_.data());
    for (size_t e = 0; e < entries_.size(); ++e) entries_[e].to(targets_[e], glide_samples_);
  }

 private:
  bool scalar() const { return n_inputs_ == 1 && n_outputs_ == 1; }

  /// The matrix of each sample from the curve's values at that sample's song time.
  void process_automated(const std::vector<const float*>& x, const std::vector<float*>& y,
                         int64_t n) {
    const int64_t last_input = int64_t(x.size()) - 1;
    for (int64_t i = 0; i < n; ++i, ++clock_) {
      for (size_t e = 0; e < values_.size(); ++e)
        values_[e] = physical_of_raw_(curve_->at(clock_ - input_latency_, int64_t(e)));
      matrix_of_(values_.data(), targets_.data());
      for (size_t o = 0; o < y.size(); ++o) {
        float sum = 0;
        if (scalar()) {
          y[o][i] = targets_[0] * x[o][i];
          continue;
        }
        for (int64_t c = 0; c < n_inputs_; ++c)
          sum +=
              targets_[size_t(int64_t(o) * n_inputs_ + c)] * x[size_t(std::min(c, last_input))][i];
        y[o][i] = sum;
      }
    }
  }

  int64_t n_inputs_, n_outputs_, channels_, glide_samples_;
  void (*matrix_of_)(const double*, float*);
  std::vector<double> values_;
  std::vector<float> targets_;
  std::vector<Glide> entries_;
  std::shared_ptr<const StreamCurve> curve_;  // where the values follow automation
  double (*physical_of_raw_)(double) = nullptr;
  int64_t input_latency_ = 0, clock_ = 0;
};

}  // namespace

StreamCurve::StreamCurve(std::vector<float> points, int64_t elements, double samples_per_point)
    : points_(std::move(points)), elements_(elements) {
  for (size_t i = 0; i < points_.size() / size_t(elements); ++i)
    positions_.push_back(double(i) * samples_per_point);
}

float StreamCurve::at(int64_t sample, int64_t element) const {
  // As dsp::piecewise_linear: the points either side, and at::lerp's two-sided form in float.
  const double t   = double(sample);
  const auto next  = std::upper_bound(positions_.begin(), positions_.end(), t) - positions_.begin();
  const auto last  = int64_t(positions_.size()) - 1;
  const auto below = std::max<int64_t>(next - 1, 0), above = std::min<int64_t>(next, last);
  const float lo = points_[size_t(below * elements_ + element)];
  if (below == above) return lo;
  const float hi = points_[size_t(above * elements_ + element)];
  const float w  = float((t - positions_[size_t(below)]) /
                        (positions_[size_t(above)] - positions_[size_t(below)]));
  return w < 0.5f ? lo + w * (hi - lo) : hi - (hi - lo) * (1 - w);
}

StreamControl stream_control(const ParameterSpec& spec, const at::Tensor& raw, int64_t element,
                             double minimum, double maximum) {
  StreamControl control;
  const int64_t elements = raw.numel();
  control.name = spec.physical_name + (elements > 1 ? "[" + std::to_string(element) + "]" : "");
  control.unit = spec.unit;
  control.description = spec.description;
  control.value       = spec.to_physical(raw.to(at::kDouble)).reshape({-1})[element].item<double>();
  control.minimum     = std::min(std::max(minimum, spec.physical_min), control.value);
  control.maximum     = std::max(std::min(maximum, spec.physical_max), control.value);
  return control;
}

std::unique_ptr<NodeStream> matrix_stream(int64_t n_inputs, int64_t n_outputs,
                                          std::vector<StreamControl> controls,
                                          void (*matrix_of)(const double*, float*),
                                          const StreamSetup& setup, const std::string& raw_name,
                                          double (*physical_of_raw)(double)) {
  return std::make_unique<MatrixStream>(n_inputs, n_outputs, std::move(controls), matrix_of, setup,
                                        raw_name, physical_of_raw);
}

std::unique_ptr<NodeStream> LinearProcessor::make_stream(const TensorDict& parameters,
                                                         const StreamSetup& setup) const {
  return stream_by_impulse_responses(*this, parameters, setup);
}

}  // namespace grafx
