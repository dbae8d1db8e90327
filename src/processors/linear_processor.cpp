// What streaming forms are made from with LibTorch: impulse responses measured with a
// processor's own forward, and controls from raw parameters.

#include <grafx/error.h>
#include <grafx/processors/linear_processor.h>

#include <grafx/stream/impulse_response_form.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

namespace grafx {

std::unique_ptr<NodeStream> stream_by_impulse_responses(const LinearProcessor& processor,
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
  const int64_t length     = support.past_samples + support.future_samples + 1;
  const at::Tensor nonzero = processor.response_support(raw);
  if (nonzero.defined() && (nonzero.dim() != 1 || nonzero.size(0) != length))
    refuse("its response support has " + std::to_string(nonzero.numel()) + " values for " +
           std::to_string(length) + " samples");
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
    // [rows, outlet channels, length]
    const at::Tensor y = nonzero.defined()
                             ? outlet.masked_fill(nonzero.logical_not(), 0.0f).contiguous()
                             : outlet.contiguous();
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
  return impulse_response_stream(rows, outlet_channels, std::move(paths), support.future_samples,
                                 setup.max_block);
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

at::Tensor LinearProcessor::response_support(const TensorDict&) const { return {}; }

at::Tensor LinearProcessor::nonzero_lags(const at::Tensor& responses) {
  return responses.ne(0).reshape({-1, responses.size(-1)}).any(0);
}

at::Tensor LinearProcessor::until_decayed(const at::Tensor& responses) {
  const at::Tensor magnitude = responses.abs().reshape({-1, responses.size(-1)}).amax(0);
  const at::Tensor above =
      magnitude.gt(TemporalSupport::kDecayTolerance * magnitude.max().item<double>());
  const int64_t length = responses.size(-1);
  int64_t last         = length - 1;
  const bool* a        = above.contiguous().data_ptr<bool>();
  while (last >= 0 && !a[last]) --last;
  return at::arange(length).le(last);
}

std::unique_ptr<NodeStream> LinearProcessor::make_stream(const TensorDict& parameters,
                                                         const StreamSetup& setup) const {
  return stream_by_impulse_responses(*this, parameters, setup);
}

}  // namespace grafx
