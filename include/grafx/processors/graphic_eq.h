#pragma once
/// Graphic equalizers of fixed bands (GRAFX's GraphicEqualizer; Liski & Välimäki 2017), one
/// filter per node on every channel: a cascade of one peaking biquad per band, run exactly.
///
/// | type                      | letter | bands at 44.1 kHz                         |
/// |---------------------------|--------|-------------------------------------------|
/// | `graphic_eq`              | G      | 24 Bark bands, 50 Hz … 13.5 kHz           |
/// | `graphic_eq_third_octave` | T      | 31 third-octave bands, 19.7 Hz … 20.2 kHz |
///
/// Bands whose centre is at or above Nyquist are dropped. Band k, centre f_k and bandwidth B_k
/// (the paper's tables), with g = e^{raw} its gain and c = 0.4:
///   β = tan(π·B_k/fs)·sqrt(ρ),  ρ = (1 − g^{−2c}) / (g^{2(1−c)} − 1)  (ρ → c/(1 − c) at g = 1),
///   b = [1 + g·β, −2·cos ω_k, 1 − g·β],  a = [1 + β, −2·cos ω_k, 1 − β].
/// The band's gain is g at its centre and g^c at its band edges. ρ is computed in a form that
/// is smooth through g = 1; GRAFX switches formulas at |raw| = 1e−3 (a jump).
///
/// Neighbouring bands overlap, so the filters' gains are not the command gains: as the paper,
/// the filter gains are the least-squares solution of the interaction matrix B (each filter's dB
/// response, at a 17 dB prototype gain, at the centres and the midpoints between them) for the
/// commands at the centres and their means at the midpoints, g_filter = B⁺·E·g_command, a
/// fixed linear map. GRAFX applies the commands to the filters directly: its ±6 dB commands
/// give up to ±10 dB on third-octave bands.
///
/// Parameters: the table in docs/processors/equalizers.md, generated from parameter_specs() (also
/// `grafx processors TYPE`).
///
/// The commands can be automated (linear in dB): each sample's filters are then designed from
/// its commands and run by dsp::biquad_cascade_time_varying.

#include <grafx/processors/descriptor.h>
#include <grafx/processors/linear_processor.h>

namespace grafx {

enum class GraphicEqBands { kBark, kThirdOctave };

ProcessorDescriptor graphic_eq_descriptor();               ///< letter G
ProcessorDescriptor graphic_eq_third_octave_descriptor();  ///< letter T

class GraphicEq : public LinearProcessor {
 public:
  static constexpr double kEdgeGainExponent = 0.4;   ///< c: the gain at band edges is g^c
  static constexpr double kPrototypeGainDb  = 17.0;  ///< the interaction matrix's gain

  GraphicEq(const ProcessorConfig& config, GraphicEqBands bands);
  std::string name() const override;
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  TemporalSupport temporal_support(const TensorDict& parameters) const override;
  /// Centre frequencies and bandwidths in Hz of the bands kept at this sample rate.
  const std::vector<double>& centres_hz() const { return centres_hz_; }
  const std::vector<double>& bandwidths_hz() const { return bandwidths_hz_; }
  /// The band filters' natural-log gains [..., K] for command gains [..., K] (the interaction
  /// matrix correction, linear).
  at::Tensor filter_gains(const at::Tensor& log_gains) const;
  /// Each band's peaking biquad (b, a), each [..., K, 3], for filter gains [..., K].
  std::pair<at::Tensor, at::Tensor> band_filters(const at::Tensor& filter_log_gains) const;

 private:
  SampleRate sample_rate_;
  GraphicEqBands bands_;
  std::vector<double> centres_hz_, bandwidths_hz_;
  ConstantCache constants_;
};

}  // namespace grafx
