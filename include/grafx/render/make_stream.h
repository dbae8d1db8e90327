#pragma once
/// Streams made from graphs: the LibTorch side of the real-time engine (grafx/stream/stream.h),
/// which turns a graph, its processors and its parameters into a stream, each node by its
/// processor's own streaming form (Processor::make_stream).
///
///   Stream stream = make_stream(graph, processors, parameters, {48000, 512, 2});
///   std::string program = stream.save();   // for a host without LibTorch (the LV2 plugin)

#include <grafx/graph/graph.h>
#include <grafx/processors/registry.h>
#include <grafx/render/render.h>
#include <grafx/stream/stream.h>

#include <ATen/Tensor.h>

#include <functional>

namespace grafx {

/// The stream of `graph` with `processors` and `parameters`: its live nodes in the graph's
/// topological order, so that a host lists each strip's controls together, with delay lines
/// where paths of different latencies meet. Throws what render() throws for a graph, processors
/// and parameters that do not fit each other or parameters that are not finite, RenderError
/// [grafx.stream.options] for a block size or channel count out of range, and
/// [grafx.stream.unsupported] naming the node whose processor cannot stream exactly or which
/// automates a parameter its form cannot follow.
Stream make_stream(const Graph& graph, const Processors& processors, const Parameters& parameters,
                   const StreamOptions& options);

/// Streams `sources` ([n_sources, source_channels, L], any floating type) through `stream`,
/// reset first and told the song's end, in blocks whose sizes `next_block` picks (clamped to
/// 1..max_block), then as much silence as the latency, and returns the outputs with the latency
/// removed: what the offline render gives, [n_outputs, output_channels, L] in float32. For tests
/// and the command line, which shows `progress` (samples done, of the total) after each block.
at::Tensor stream_through(Stream& stream, const at::Tensor& sources,
                          const std::function<int64_t()>& next_block,
                          const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace grafx
