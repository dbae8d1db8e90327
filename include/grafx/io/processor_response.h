#pragma once
/// Pictures of what a processor does at given parameters (`grafx processors NAME --response`).
/// Each is measured by running the processor's own forward pass on test signals:
///
/// | processors                        | picture |
/// |-----------------------------------|----------------------------------------------------------------|
/// | eq, eq_stereo, eq_midside         | magnitude response (dB) of each filter, 20 Hz to Nyquist |
/// | compressor, noise_gate (+ variants) | static curve: output level after 2 s of a constant
/// input, against its level | | reverb                            | energy decay curve (Schroeder)
/// of the left and right impulse responses | | gain_pan, stereo_imager           | level of each
/// output channel for a source panned across the input | | delay and anything else           | left
/// and right impulse responses                               |
///
///   auto eq = make_processor("eq", {30000});
///   Plot plot = processor_response(*eq, default_parameters(*eq), 30000);
///   write_plot("eq.svg", plot.series, plot.options);

#include <grafx/io/plot.h>
#include <grafx/processors/processor.h>

namespace grafx {

struct Plot {
  std::vector<PlotSeries> series;
  PlotOptions options;
};

/// Raw parameters for one node (first dimension 1) at each spec's initial mean, in float64.
TensorDict default_parameters(const Processor& processor);

/// The picture of `processor` (made with `sample_rate`) at raw `parameters` of one node.
Plot processor_response(const Processor& processor, const TensorDict& parameters,
                        double sample_rate);

}  // namespace grafx
