#include <grafx/io/processor_response.h>
#include <grafx/processors/registry.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cmath>

namespace grafx {
namespace {

std::vector<double> values(const at::Tensor& t) {
  at::Tensor d = t.detach().to(at::kDouble).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

at::Tensor decibels(const at::Tensor& amplitude) {
  return 20 * amplitude.abs().clamp_min(1e-12).log10();
}

/// The processor's outputs for one input per inlet, with the parameters of one node repeated
/// for every item.
std::vector<at::Tensor> run_inputs(const Processor& processor,
                                   const std::vector<at::Tensor>& inputs,
                                   const TensorDict& parameters) {
  c10::NoGradGuard no_grad;
  TensorDict repeated;
  for (const auto& [name, p] : parameters) {
    std::vector<int64_t> times(size_t(p.dim()), 1);
    times[0]       = inputs[0].size(0);
    repeated[name] = p.to(inputs[0].scalar_type()).repeat(times);
  }
  return processor.forward(inputs, repeated).outputs;
}

/// The processor's outputs for x at every inlet.
std::vector<at::Tensor> run_all(const Processor& processor, const at::Tensor& x,
                                const TensorDict& parameters) {
  return run_inputs(processor, std::vector<at::Tensor>(processor.inlets().size(), x), parameters);
}

/// The first outlet's output.
at::Tensor run(const Processor& processor, const at::Tensor& x, const TensorDict& parameters) {
  return run_all(processor, x, parameters)[0];
}

/// Unit impulses on both channels (N = 1).
at::Tensor impulse(int64_t length) {
  at::Tensor x = at::zeros({1, 2, length}, at::kDouble);
  x.select(2, 0).fill_(1.0);
  return x;
}

/// The left and right rows of `rows` (2×n) against x.
std::vector<PlotSeries> left_right(const std::vector<double>& x, const at::Tensor& rows) {
  return {{"left", x, values(rows[0])}, {"right", x, values(rows[1])}};
}

Plot make_plot(std::vector<PlotSeries> series, std::string x_label, std::string y_label,
               double y_min = NAN, double y_max = NAN) {
  Plot plot{std::move(series), {}};
  plot.options.x_label = std::move(x_label);
  plot.options.y_label = std::move(y_label);
  plot.options.y_min   = y_min;
  plot.options.y_max   = y_max;
  return plot;
}

/// Filters: the spectrum of the response to impulses at the centre (mid/side: a mid and a side
/// impulse).
Plot magnitude_response(const Processor& processor, const TensorDict& parameters,
                        double sample_rate, ResponsePicture picture) {
  const int64_t length = 16384, centre = length / 2;
  bool mid_side = picture == ResponsePicture::kMagnitudeMidSide,
       stereo   = picture == ResponsePicture::kMagnitudeLeftRight;
  at::Tensor x  = at::zeros({mid_side ? 2 : 1, 2, length}, at::kDouble);
  x.select(2, centre).fill_(1.0);
  if (mid_side) x[1][1][centre] = -1.0;  // L − R: a side impulse
  at::Tensor y       = at::roll(run(processor, x, parameters), -centre, -1);
  at::Tensor gain_db = decibels(at::fft_rfft(y, length, -1));
  std::vector<double> frequency =
      values(at::arange(length / 2 + 1, at::kDouble) * (sample_rate / length));
  std::vector<PlotSeries> series;
  if (mid_side)
    series = {{"mid", frequency, values(gain_db[0][0])},
              {"side", frequency, values(gain_db[1][0])}};
  else if (stereo)
    series = left_right(frequency, gain_db[0]);
  else
    series = {{"", frequency, values(gain_db[0][0])}};
  // At least ±12 dB, so that flat looks flat.
  Plot plot          = make_plot(std::move(series), "frequency (Hz)", "gain (dB)",
                                 std::min(-12.0, std::floor(gain_db.min().item<double>() / 6) * 6),
                                 std::max(12.0, std::ceil(gain_db.max().item<double>() / 6) * 6));
  plot.options.log_x = true;
  plot.options.x_min = 20;
  plot.options.x_max = sample_rate / 2;
  return plot;
}

/// Crossovers: the magnitude response of every outlet and of their sum, from impulses.
Plot band_responses(const Processor& processor, const TensorDict& parameters, double sample_rate) {
  const int64_t length            = 16384;
  std::vector<at::Tensor> outputs = run_all(processor, impulse(length), parameters);
  std::vector<double> frequency =
      values(at::arange(length / 2 + 1, at::kDouble) * (sample_rate / length));
  std::vector<PlotSeries> series;
  at::Tensor sum = at::zeros_like(outputs[0]);
  for (size_t o = 0; o < outputs.size(); ++o) {
    sum = sum + outputs[o];
    series.push_back({processor.outlets()[o], frequency,
                      values(decibels(at::fft_rfft(outputs[o][0][0], length, -1)))});
  }
  series.push_back({"sum", frequency, values(decibels(at::fft_rfft(sum[0][0], length, -1)))});
  Plot plot          = make_plot(std::move(series), "frequency (Hz)", "gain (dB)", -60, 12);
  plot.options.log_x = true;
  plot.options.x_min = 20;
  plot.options.x_max = sample_rate / 2;
  return plot;
}

/// Compressors and gates: the output level after 2 s of a constant signal, for levels −80…0 dB.
Plot static_curve(const Processor& processor, const TensorDict& parameters, double sample_rate) {
  at::Tensor level_db = at::linspace(-80, 0, 81, at::kDouble);
  int64_t length      = std::max<int64_t>(16, std::llround(2 * sample_rate));
  // One channel in float32: 81 signals of 2 s (they accept any number of channels).
  at::Tensor x = (level_db * (std::log(10.0) / 20))
                     .exp()
                     .to(at::kFloat)
                     .view({-1, 1, 1})
                     .expand({81, 1, length});
  at::Tensor y = run(processor, x.contiguous(), parameters).select(2, length - 1).select(1, 0);
  std::vector<double> input = values(level_db);
  return make_plot({{"output", input, values(decibels(y))}, {"unity", input, input, true}},
                   "input level (dB)", "output level (dB)", -80, 0);
}

/// Reverbs: Schroeder's energy decay curve, 10·log10(Σ_{m ≥ n} h[m]² / Σ h²), per channel.
Plot energy_decay(const Processor& processor, const TensorDict& parameters, double sample_rate) {
  int64_t length = std::llround(2.2 * sample_rate);
  at::Tensor remaining =
      run(processor, impulse(length), parameters)[0].pow(2).flip(-1).cumsum(-1).flip(-1);
  at::Tensor decay_db =
      10 * (remaining / remaining.select(1, 0).unsqueeze(1)).clamp_min(1e-30).log10();
  return make_plot(left_right(values(at::arange(length, at::kDouble) / sample_rate), decay_db),
                   "time (s)", "energy remaining (dB)", -90, 0);
}

/// Stereo processors: a source panned from left to right with the constant-power law
/// (L, R) = (cos θ, sin θ), θ ∈ [0, π/2]; the level of each output channel of each outlet. A
/// processor of two inlets gets L at the first and R at the second (a mid/side merge: the mid
/// and side levels of a position).
Plot stereo_field(const Processor& processor, const TensorDict& parameters, double sample_rate) {
  at::Tensor pan   = at::linspace(-1, 1, 101, at::kDouble);
  at::Tensor theta = (pan + 1) * (M_PI / 4);
  at::Tensor x     = at::stack({theta.cos(), theta.sin()}, 1).unsqueeze(-1);  // 101×2×1
  std::vector<at::Tensor> outputs =
      processor.inlets().size() == 2
          ? run_inputs(processor, {x.narrow(1, 0, 1), x.narrow(1, 1, 1)}, parameters)
          : run_all(processor, x, parameters);
  std::vector<double> position = values(pan);
  std::vector<PlotSeries> series;
  const auto outlets = processor.outlets();
  for (size_t o = 0; o < outputs.size(); ++o) {
    at::Tensor out_db  = decibels(outputs[o].select(2, 0));
    std::string prefix = outputs.size() > 1 ? outlets[o] : std::string();
    for (int64_t c = 0; c < out_db.size(1); ++c) {
      std::string channel = out_db.size(1) == 1 ? "" : c == 0 ? "left" : "right";
      std::string label   = prefix + (prefix.empty() || channel.empty() ? "" : " ") + channel;
      series.push_back(
          {(label.empty() ? "" : label + " ") + "out", position, values(out_db.select(1, c))});
    }
  }
  at::Tensor in_db  = decibels(x.select(2, 0));
  const auto inlets = processor.inlets();
  for (int64_t c = 0; c < 2; ++c)
    series.push_back({(inlets.size() == 2 ? inlets[size_t(c)]
                       : c == 0           ? "left"
                                          : "right") +
                          " in",
                      position, values(in_db.select(1, c)), true});
  return make_plot(series, "input pan (−1 left, +1 right)", "level (dB)", -40);
}

Plot impulse_response(const Processor& processor, const TensorDict& parameters,
                      double sample_rate) {
  int64_t length = std::llround(2.1 * sample_rate);
  return make_plot(left_right(values(at::arange(length, at::kDouble) * (1000 / sample_rate)),
                              run(processor, impulse(length), parameters)[0]),
                   "time (ms)", "amplitude");
}

}  // namespace

TensorDict default_parameters(const Processor& processor) {
  TensorDict parameters;
  for (const auto& spec : processor.parameter_specs()) {
    std::vector<int64_t> shape{1};
    shape.insert(shape.end(), spec.shape.begin(), spec.shape.end());
    parameters[spec.name] = at::full(shape, spec.init_mean, at::kDouble);
  }
  return parameters;
}

Plot processor_response(const Processor& processor, const TensorDict& parameters,
                        SampleRate sample_rate) {
  const ProcessorDescriptor* descriptor = find_processor(processor.name());
  const ResponsePicture picture = descriptor ? descriptor->response : ResponsePicture::kImpulse;
  const double rate             = double(sample_rate);
  Plot plot;
  switch (picture) {
    case ResponsePicture::kMagnitude:
    case ResponsePicture::kMagnitudeLeftRight:
    case ResponsePicture::kMagnitudeMidSide:
      plot = magnitude_response(processor, parameters, rate, picture);
      break;
    case ResponsePicture::kStaticCurve:
      plot = static_curve(processor, parameters, rate);
      break;
    case ResponsePicture::kEnergyDecay:
      plot = energy_decay(processor, parameters, rate);
      break;
    case ResponsePicture::kStereoField:
      plot = stereo_field(processor, parameters, rate);
      break;
    case ResponsePicture::kImpulse:
      plot = impulse_response(processor, parameters, rate);
      break;
    case ResponsePicture::kBands:
      plot = band_responses(processor, parameters, rate);
      break;
  }
  plot.options.title = processor.name() + " at " + std::to_string(sample_rate) + " Hz";
  return plot;
}

}  // namespace grafx
