#pragma once
/// Pictures of what a processor does at given parameters (`grafx processors NAME --response`),
/// chosen by its descriptor's `response` (grafx/processors/descriptor.h). Each is measured by
/// running the processor's own forward pass on test signals:
///
///   kMagnitude*    magnitude response (dB) of each filter, 20 Hz to Nyquist
///   kStaticCurve   output level after 2 s of a constant input, against its level
///   kEnergyDecay   Schroeder energy decay curve of the left and right impulse responses
///   kStereoField   level of each output channel for a source panned across the input
///   kImpulse       left and right impulse responses (also for unregistered processors)
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
                        SampleRate sample_rate);

}  // namespace grafx
