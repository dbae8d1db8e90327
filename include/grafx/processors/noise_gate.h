#pragma once
/// Noise gate (letter n): the downward expander of the GRAFX paper (GRAFX's NoiseGate with its
/// defaults). Level detector, smoothing and parameters as the compressor
/// (grafx/processors/compressor.h); the gain computer attenuates below the threshold instead:
///
///   G_y − G_u = (1 − R)·knee(T − G_u)   i.e. G_y = T + R·(G_u − T) below the knee, G_u above it
///   y_c = exp((G_y − G_u)/2)·x_c         below the threshold, R dB down per dB the input falls
///
/// `noise_gate` smooths the level with one pole (the paper), `noise_gate_ballistics` with
/// separate attack (rising) and release (falling) coefficients. At ratio 1 the gate is the
/// identity. Input and output: N×C×L, any C. Like the compressor, the amplitude gain is half
/// the log-energy gain (GRAFX applies the whole, so its gate expands by 2R − 1, not R).
///
///   NoiseGate gate({30000});

#include <grafx/dsp/recursion.h>
#include <grafx/processors/processor.h>

namespace grafx {

class NoiseGate : public Processor {
 public:
  explicit NoiseGate(const ProcessorConfig& config,
                     dsp::EnvelopeSmoothing smoothing = dsp::EnvelopeSmoothing::one_pole)
      : smoothing_(smoothing), sample_rate_(config.sample_rate) {}
  std::string name() const override;
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;

 private:
  dsp::EnvelopeSmoothing smoothing_;
  double sample_rate_;
};

}  // namespace grafx
