#pragma once
/// The streaming form of a linear processor: its impulse responses, convolved block by block.

#include <grafx/stream/convolution.h>
#include <grafx/stream/form.h>

#include <memory>
#include <vector>

namespace grafx {

/// A linear processor's impulse responses from its inlets' channels (inputs, in order) to its
/// outlets' (outputs), convolved with a latency of `latency` samples (impulse_response_form.cpp).
std::unique_ptr<NodeStream> impulse_response_stream(
    int64_t n_inputs, std::vector<int64_t> outlet_channels,
    std::vector<dsp::StreamConvolverMatrix::Path> paths, int64_t latency, int64_t max_block);

}  // namespace grafx
