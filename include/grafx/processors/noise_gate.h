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

#include <grafx/processors/compressor.h>

namespace grafx {

ProcessorDescriptor noise_gate_descriptor();             ///< letter n
ProcessorDescriptor noise_gate_ballistics_descriptor();  ///< letter N

class NoiseGate : public Dynamics {
 public:
  explicit NoiseGate(const ProcessorConfig& config,
                     dsp::EnvelopeSmoothing smoothing = dsp::EnvelopeSmoothing::kOnePole)
      : Dynamics(config, Curve::kNoiseGate, smoothing) {}
};

}  // namespace grafx
