#pragma once
/// Parametric equalizers (GRAFX's ParametricEqualizer): a low shelf, N peaking filters (bells)
/// and a high shelf of the RBJ Audio EQ Cookbook, cascaded and run exactly (grafx/dsp/biquad.h).
/// About 30 parameters, where the FIR EQ has 1024. Options (GRAFX's num_filters and
/// use_shelving_filters): `bells` (N, 8 by default) and `shelves` (true); without shelves every
/// band is a bell. B bands: N + 2 with shelves, N without.
///
/// | type                    | letter | filters                     | parameter shape |
/// |-------------------------|--------|-----------------------------|-----------------|
/// | `parametric_eq`         | q      | one, on every channel       | [B]             |
/// | `parametric_eq_stereo`  | P      | one per channel (L, R)      | [2, B]          |
/// | `parametric_eq_midside` | M      | one for mid, one for side   | [2, B]          |
///
/// Parameters: the table in docs/processors/equalizers.md, generated from parameter_specs() (also
/// `grafx processors TYPE`).
///
/// The gains can be automated (linear in dB; the sections then change at every sample,
/// dsp::biquad_cascade_time_varying). Band 0 is the low shelf, bands 1…N the bells, band N + 1 the
/// high shelf (without shelves, bands 0…N − 1 the bells). Every raw value is a stable filter.
/// GRAFX's gains are e^{2·raw} at the centre and its frequencies linear in σ(raw); ours are the
/// cookbook's gain and a log-frequency scale whose raw 0 spreads the bands.
///
///   ParametricEq eq({44100}, EqChannels::kMidSide);

#include <grafx/processors/descriptor.h>
#include <grafx/processors/eq.h>
#include <grafx/processors/linear_processor.h>

namespace grafx {

ProcessorDescriptor parametric_eq_descriptor();          ///< letter q
ProcessorDescriptor parametric_eq_stereo_descriptor();   ///< letter P
ProcessorDescriptor parametric_eq_midside_descriptor();  ///< letter M

class ParametricEq : public LinearProcessor {
 public:
  ParametricEq(const ProcessorConfig& config, EqChannels channels);
  static std::vector<OptionSpec> option_specs();
  std::string name() const override;
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  TemporalSupport temporal_support(const TensorDict& parameters) const override;

 private:
  /// The bands' cascade (b, a), each N×C×B×3 (C = 1 for mono), or N×C×B×L×3 when the gains
  /// are automated (given per sample).
  std::pair<at::Tensor, at::Tensor> sections(const TensorDict& parameters) const;
  SampleRate sample_rate_;
  EqChannels channels_;
  int64_t n_bells_;
  bool shelves_;
  int64_t n_bands() const { return n_bells_ + (shelves_ ? 2 : 0); }
};

}  // namespace grafx
