#pragma once
/// Compressor (letter c): the feed-forward compressor of the GRAFX paper (GRAFX's Compressor
/// with its defaults: energy detector, one-pole smoothing, quadratic knee; after Giannoulis et
/// al. 2012 and Steinmetz et al. 2022).
///
///   e[n]  = mean_c x_c[n]²                                   level of the mid signal
///   ē     = one_pole(e, α)       (compressor)                smoothed exactly, in O(L)
///         = ballistics(e, α_attack, α_release, 0)  (compressor_ballistics)
///   G_u   = log(ē + 1e−5),  T = log_threshold − 6,  R = 1 + exp(log_ratio),  w = exp(log_knee)/2
///   G_y − G_u = (1/R − 1)·knee(G_u − T),  knee(d) = 0 (d < −w), (d + w)²/(4w) (|d| ≤ w), d (d > w)
///   y_c   = exp((G_y − G_u)/2)·x_c                           the same gain on every channel
///
/// Parameters: the table in docs/processors/dynamics.md, generated from parameter_specs() (also
/// `grafx processors TYPE`).
///
/// α is σ(raw) bounded by 1 − 1e−5. At ratio 1 (log_ratio → −∞) the compressor is the identity.
/// Input and output: N×C×L, any C. The smoothing starts from silence (ē[−1] = 0).
///
/// Options (GRAFX's constructor arguments; set in a graph file's configured type), for every
/// compressor and gate type:
///
/// | option                  | default     | choices                                        |
/// |-------------------------|-------------|------------------------------------------------|
/// | `knee`                  | quadratic   | hard: no knee (and no `log_knee`); quadratic; exponential: (1/R − 1)·softplus(W·d)/W with W = exp(log_knee) (GRAFX's) |
/// | `detection`             | energy      | energy: e = mean_c x_c²; amplitude: e = (mean_c |x_c|)², so levels stay energies in dB |
/// | `level_smoothing`       | the type's  | one_pole (`z_alpha`), ballistics (`z_alpha_attack`, `z_alpha_release`), none |
/// | `gain_smoothing`        | none        | one_pole (`z_alpha_gain`), ballistics (`z_alpha_gain_attack` while the gain falls, `z_alpha_gain_release` while it rises), none |
/// | `gain_smoothing_domain` | linear      | linear: the amplitude gain is smoothed; log: its logarithm (dB) |
///
/// Gain smoothing starts from unity gain (GRAFX's FIR smoother starts from 0, fading every
/// signal in) and is an exact recursion in either domain: GRAFX's log-domain one-pole smoother
/// clips the log gain at 0 dB with a ReLU, so its gain never falls; here it does.
///
/// The output's level is the curve's: G_y is a log energy, so the amplitude gain is half of
/// G_y − G_u. Above the knee, the level rises 1/R dB per dB of input.
///
/// Differences from GRAFX: GRAFX multiplies the amplitude by exp(G_y − G_u), which doubles every
/// gain in dB, so its R acts as the ratio R/(2 − R): its compressors start (R = 2) as limiters,
/// and for R > 2 their output falls as their input rises; here R is the ratio. The one-pole
/// smoother is the exact recursion, not a 16384-tap FIR (truncated, convolved by FFT, then
/// clipped by a ReLU). `compressor_ballistics` is a new variant with separate attack and
/// release coefficients on the level detector.
///
///   Compressor compressor({30000});
///   auto y = compressor.forward({x}, parameters).outputs[0];

#include <grafx/dsp/recursion.h>
#include <grafx/processors/descriptor.h>
#include <grafx/processors/linear_processor.h>

namespace grafx {

/// The compressor and the noise gate (grafx/processors/noise_gate.h): one level detector,
/// smoother and parameter set; their gain curves differ.
class Dynamics : public Processor {
 public:
  enum class Curve { kCompressor, kNoiseGate };
  /// Whose level the detector follows: the input's own, or a second inlet's (`sidechain`).
  enum class Detector { kSelf, kSidechain };

  using Knee = dsp::Knee;

  /// `smoothing`: the type's level smoothing (compressor or compressor_ballistics, ...), which
  /// the option `level_smoothing` may change.
  Dynamics(const ProcessorConfig& config, Curve curve, dsp::EnvelopeSmoothing smoothing,
           Detector detector = Detector::kSelf);
  static std::vector<OptionSpec> option_specs(dsp::EnvelopeSmoothing smoothing);
  /// compressor, compressor_ballistics, noise_gate, noise_gate_ballistics, sidechain_compressor
  /// or sidechain_gate.
  std::string name() const override;
  /// `main`, and `sidechain` for the sidechain types.
  std::vector<std::string> inlets() const override;
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  /// The mix folded into the gain.
  std::optional<ProcessorOutput> forward_mixed(const std::vector<at::Tensor>& inputs,
                                               const TensorDict& parameters,
                                               const at::Tensor& wet) const override;
  TemporalSupport temporal_support(const TensorDict& parameters) const override;
  /// Sample by sample: the same detector, smoothers (dsp::ballistics_step) and knee as
  /// `forward`, in float32.
  std::unique_ptr<NodeStream> make_stream(const TensorDict& parameters,
                                          const StreamSetup& setup) const override;

 private:
  /// x·g, or with wet amounts `wet` the mix folded into the gain, x·(1 + w·(g − 1)): the paper's
  /// dynamics (one-pole level smoothing of the energy, no gain smoothing, one threshold per
  /// item) as one Function on the CPU, other forms composed of ATen operations and the kernels.
  at::Tensor processed(const std::vector<at::Tensor>& inputs, const TensorDict& parameters,
                       const at::Tensor& wet) const;

  Curve curve_;
  dsp::EnvelopeSmoothing type_smoothing_;  // names the type
  dsp::EnvelopeSmoothing level_smoothing_;
  dsp::EnvelopeSmoothing gain_smoothing_;
  bool gain_smoothing_in_log_ = false;
  bool amplitude_detection_   = false;
  Knee knee_                  = Knee::kQuadratic;
  Detector detector_;
  SampleRate sample_rate_;
};

/// The descriptor of one member of the family (letters c, C, n, N, S, K).
ProcessorDescriptor dynamics_descriptor(Dynamics::Curve curve, dsp::EnvelopeSmoothing smoothing,
                                        Dynamics::Detector detector = Dynamics::Detector::kSelf);
ProcessorDescriptor compressor_descriptor();             ///< letter c
ProcessorDescriptor compressor_ballistics_descriptor();  ///< letter C
/// Sidechain dynamics (inlets `main` and `sidechain`): the level is detected on `sidechain`
/// (its mean square over channels, smoothed with attack/release ballistics) and the gain applied
/// to `main`; otherwise as compressor_ballistics and noise_gate_ballistics. With the same
/// signal on both inlets they are those processors exactly. A bass ducked by the kick: the
/// bass on `main`, the kick on `sidechain`.
ProcessorDescriptor sidechain_compressor_descriptor();  ///< letter S
ProcessorDescriptor sidechain_gate_descriptor();        ///< letter K

class Compressor : public Dynamics {
 public:
  explicit Compressor(const ProcessorConfig& config,
                      dsp::EnvelopeSmoothing smoothing = dsp::EnvelopeSmoothing::kOnePole)
      : Dynamics(config, Curve::kCompressor, smoothing) {}
};

}  // namespace grafx
