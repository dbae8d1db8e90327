#include <grafx/dsp/biquad.h>
#include <grafx/error.h>
#include <grafx/processors/crossover.h>

#include "processors/units.h"

#include <ATen/ATen.h>

namespace grafx {
namespace {

using dsp::CookbookShape;

/// The 3-band crossover's frequencies on the processors' log-frequency scale (5 Hz to Nyquist):
/// positions p1 = σ(raw1 + o1) and p2 = p1 + (1 − p1)·σ(raw2 + o2), so the second lies above the
/// first; the offsets make raw 0 give 250 Hz and 4 kHz.
struct SplitScale {
  units::LogFrequency scale;

  explicit SplitScale(SampleRate rate) : scale(5.0, 0.5 * double(rate), {}) {
    double p1     = scale.position(std::min(250.0, 0.225 * double(rate)));
    double p2     = scale.position(std::min(4000.0, 0.45 * double(rate)));
    scale.offsets = {units::LogFrequency::logit(p1),
                     units::LogFrequency::logit((p2 - p1) / (1 - p1))};
  }
  at::Tensor to_hz(const at::Tensor& raw) const {
    at::Tensor s  = (raw + scale.offset(raw)).sigmoid();
    at::Tensor p1 = s.narrow(-1, 0, 1);
    return scale.hz_at(at::cat({p1, p1 + (1 - p1) * s.narrow(-1, 1, 1)}, -1));
  }
  at::Tensor to_raw(const at::Tensor& hz) const {
    at::Tensor p = scale.position(hz), p1 = p.narrow(-1, 0, 1);
    return at::cat({p1, (p.narrow(-1, 1, 1) - p1) / (1 - p1)}, -1).logit() - scale.offset(hz);
  }
};

/// A split an engineer might choose: 200 Hz–2 kHz; 3 bands: 100–400 Hz and 2–6 kHz.
TensorDict musical_split(const PriorContext& c) {
  const double top = 0.4 * double(c.sample_rate);
  std::vector<double> hz;
  if (c.processor.parameter_specs().front().shape.back() == 1)
    hz = {std::min(c.random.log_uniform(200, 2000), top)};
  else
    hz = {std::min(c.random.log_uniform(100, 400), top / 4),
          std::min(c.random.log_uniform(2000, 6000), top)};
  return {{"crossover_hz", at::tensor(hz, at::kDouble)}};
}

ProcessorDescriptor crossover_of(std::string name, char letter, int64_t n_bands,
                                 std::string summary) {
  auto d          = ProcessorDescriptor::of<Crossover>(std::move(name), letter, n_bands);
  d.summary       = std::move(summary);
  d.response      = ResponsePicture::kBands;
  d.musical_prior = musical_split;
  return d;
}

}  // namespace

ProcessorDescriptor crossover_descriptor() {
  return crossover_of("crossover", 'X', 2,
                      "Linkwitz-Riley crossover (4th order) into low and high bands");
}

ProcessorDescriptor crossover_3band_descriptor() {
  return crossover_of("crossover_3band", 'Y', 3,
                      "Linkwitz-Riley crossover (4th order) into low, mid and high bands");
}

Crossover::Crossover(const ProcessorConfig& config, int64_t n_bands)
    : sample_rate_(config.sample_rate), n_bands_(n_bands) {
  if (n_bands != 2 && n_bands != 3)
    throw ProcessorError("grafx.processor.config",
                         "crossover: expected 2 or 3 bands, but got " + std::to_string(n_bands));
  if (sample_rate_ < 100)
    throw ProcessorError("grafx.processor.config",
                         name() + ": expected a sample rate of at least 100 Hz, but got " +
                             std::to_string(sample_rate_) + " Hz");
}

std::vector<std::string> Crossover::outlets() const {
  if (n_bands_ == 2) return {"low", "high"};
  return {"low", "mid", "high"};
}

std::vector<ParameterSpec> Crossover::parameter_specs() const {
  if (n_bands_ == 2)
    return {units::frequency_spec("crossover", "crossover_hz", {1}, sample_rate_, {1000.0})
                .about("crossover frequency")};
  SplitScale split(sample_rate_);
  return {ParameterSpec::raw("crossover", {2})
              .physical(
                  "crossover_hz", "Hz", [split](const at::Tensor& raw) { return split.to_hz(raw); },
                  [split](const at::Tensor& hz) { return split.to_raw(hz); })
              .range(10.0, 0.499 * double(sample_rate_))
              .about("low/mid and mid/high crossover frequencies (increasing)")};
}

std::pair<at::Tensor, at::Tensor> Crossover::sections(const TensorDict& parameters) const {
  at::Tensor hz    = parameter_specs().front().to_physical(parameters.at("crossover"));
  at::Tensor omega = units::omega(hz, sample_rate_);  // N×(bands − 1)
  at::Tensor q = at::full_like(omega, M_SQRT1_2), zero = at::zeros_like(omega);
  auto section = [&](CookbookShape shape, int64_t crossover) {  // (b, a), each N×3
    return dsp::cookbook_biquad(shape, omega.select(1, crossover), q.select(1, crossover),
                                zero.select(1, crossover));
  };
  auto identity = [&] {
    at::Tensor one = at::zeros({omega.size(0), 3}, omega.options());
    one.select(1, 0).fill_(1.0);
    return std::make_pair(one, one);
  };
  // Each band a cascade of sections (padded with identities to the same count): N×bands×K×3.
  using Sections = std::vector<std::pair<at::Tensor, at::Tensor>>;
  std::vector<Sections> bands;
  auto lp1 = section(CookbookShape::kLowpass, 0), hp1 = section(CookbookShape::kHighpass, 0);
  if (n_bands_ == 2) {
    bands = {{lp1, lp1}, {hp1, hp1}};
  } else {
    auto lp2 = section(CookbookShape::kLowpass, 1), hp2 = section(CookbookShape::kHighpass, 1);
    auto ap2 = section(CookbookShape::kAllpass, 1);
    bands    = {{lp1, lp1, ap2, identity()}, {hp1, hp1, lp2, lp2}, {hp1, hp1, hp2, hp2}};
  }
  std::vector<at::Tensor> b_bands, a_bands;
  for (const auto& band : bands) {
    std::vector<at::Tensor> bs, as;
    for (const auto& [b, a] : band) bs.push_back(b), as.push_back(a);
    b_bands.push_back(at::stack(bs, 1)), a_bands.push_back(at::stack(as, 1));  // N×K×3
  }
  return {at::stack(b_bands, 1).unsqueeze(2), at::stack(a_bands, 1).unsqueeze(2)};
}

ProcessorOutput Crossover::forward(const std::vector<at::Tensor>& inputs,
                                   const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const at::Tensor& x = inputs[0];  // N×C×L
  auto [b, a]         = sections(parameters);
  at::Tensor split =
      dsp::biquad_cascade(x.unsqueeze(1).expand({x.size(0), n_bands_, x.size(1), x.size(2)}), b, a);
  std::vector<at::Tensor> outputs;
  for (int64_t band = 0; band < n_bands_; ++band) outputs.push_back(split.select(1, band));
  return {outputs, {}};
}

TemporalSupport Crossover::temporal_support(const TensorDict& parameters) const {
  return units::biquad_support(sections(parameters).second);
}

}  // namespace grafx
