#include <grafx/dsp/stream_convolution.h>
#include <grafx/error.h>
#include <grafx/processors/node_stream.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>

namespace grafx {
namespace {

/// The response from one inlet channel to one outlet channel.
struct Path {
  int64_t inlet = 0, channel = 0;
  std::unique_ptr<dsp::StreamConvolver> convolver;
};

class ImpulseResponseStream : public NodeStream {
 public:
  /// paths[outlet][channel]: the responses summed into that outlet channel.
  ImpulseResponseStream(std::vector<std::vector<std::vector<Path>>> paths, int64_t latency,
                        int64_t max_block)
      : paths_(std::move(paths)), latency_(latency), scratch_(size_t(max_block)) {}

  std::vector<int64_t> outlet_channels() const override {
    std::vector<int64_t> channels;
    for (const auto& outlet : paths_) channels.push_back(int64_t(outlet.size()));
    return channels;
  }
  int64_t latency_samples() const override { return latency_; }

  void process(const InletBuffers& inlets, const OutletBuffers& outlets, int64_t n) override {
    for (size_t o = 0; o < paths_.size(); ++o)
      for (size_t d = 0; d < paths_[o].size(); ++d) {
        float* y = outlets[o][d];
        std::fill(y, y + n, 0.0f);
        for (Path& path : paths_[o][d]) {
          path.convolver->process(inlets[size_t(path.inlet)][size_t(path.channel)], scratch_.data(),
                                  n);
          for (int64_t i = 0; i < n; ++i) y[i] += scratch_[size_t(i)];
        }
      }
  }

  void reset() override {
    for (auto& outlet : paths_)
      for (auto& channel : outlet)
        for (Path& path : channel) path.convolver->reset();
  }

 private:
  std::vector<std::vector<std::vector<Path>>> paths_;
  int64_t latency_;
  std::vector<float> scratch_;
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

  std::vector<std::vector<std::vector<Path>>> paths;
  for (const at::Tensor& outlet : responses.outputs) {
    const at::Tensor y = outlet.contiguous();  // [rows, outlet channels, length]
    paths.emplace_back(size_t(y.size(1)));
    for (int64_t d = 0; d < y.size(1); ++d)
      for (int64_t r = 0; r < rows; ++r) {
        const float* h = y[r][d].data_ptr<float>();
        int64_t taps   = length;
        while (taps > 0 && h[taps - 1] == 0) --taps;  // exact zeros only: alignment is kept
        if (taps == 0) continue;                      // no path (a mid/side or stereo matrix)
        Path path;
        path.inlet     = r / channels;
        path.channel   = r % channels;
        path.convolver = std::make_unique<dsp::StreamConvolver>(std::vector<float>(h, h + taps),
                                                                setup.max_block);
        paths.back()[size_t(d)].push_back(std::move(path));
      }
  }
  return std::make_unique<ImpulseResponseStream>(std::move(paths), support.future_samples,
                                                 setup.max_block);
}

namespace {

class MatrixStream : public NodeStream {
 public:
  MatrixStream(int64_t n_inputs, int64_t n_outputs, std::vector<StreamControl> controls,
               void (*matrix_of)(const double*, float*), const StreamSetup& setup)
      : n_inputs_(n_inputs),
        n_outputs_(n_outputs),
        channels_(setup.inlet_channels.front()),
        glide_samples_(int64_t(kGlideSeconds * double(setup.sample_rate))),
        matrix_of_(matrix_of),
        values_(controls.size()),
        targets_(size_t(n_inputs * n_outputs)) {
    controls_ = std::move(controls);
    for (size_t i = 0; i < controls_.size(); ++i) values_[i] = controls_[i].value;
    matrix_of_(values_.data(), targets_.data());
    for (float entry : targets_) entries_.emplace_back(entry);
  }

  std::vector<int64_t> outlet_channels() const override {
    return {scalar() ? channels_ : n_outputs_};
  }

  void process(const InletBuffers& inlets, const OutletBuffers& outlets, int64_t n) override {
    const auto& x = inlets.front();
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
  void reset() override {}
  void set_control(size_t index, double value) override {
    if (index >= controls_.size() || !std::isfinite(value)) return;
    values_[index] = std::clamp(value, controls_[index].minimum, controls_[index].maximum);
    matrix_of_(values_.data(), targets_.data());
    for (size_t e = 0; e < entries_.size(); ++e) entries_[e].to(targets_[e], glide_samples_);
  }

 private:
  bool scalar() const { return n_inputs_ == 1 && n_outputs_ == 1; }

  int64_t n_inputs_, n_outputs_, channels_, glide_samples_;
  void (*matrix_of_)(const double*, float*);
  std::vector<double> values_;
  std::vector<float> targets_;
  std::vector<Glide> entries_;
};

}  // namespace

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
                                          const StreamSetup& setup) {
  return std::make_unique<MatrixStream>(n_inputs, n_outputs, std::move(controls), matrix_of, setup);
}

std::unique_ptr<NodeStream> LinearProcessor::make_stream(const TensorDict& parameters,
                                                         const StreamSetup& setup) const {
  return stream_by_impulse_responses(*this, parameters, setup);
}

}  // namespace grafx
