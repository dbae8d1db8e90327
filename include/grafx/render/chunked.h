#pragma once
/// Chunked rendering: a whole song rendered in pieces, so that memory stays flat with its length
/// (a fit's whole-song evaluation, `grafx render`).
///
///   render_chunks(plan, processors, parameters, sources,
///                 [&](int64_t start, const at::Tensor& outputs) { stream.add(outputs, ...); });
///   at::Tensor whole = render_in_chunks(plan, processors, parameters, sources);
///
/// Chunk [s, e) of the outputs is rendered from the sources [s − P, e + F), clipped to the song,
/// where P and F are the graph's temporal support: the largest sum of its processors' supports
/// (Processor::temporal_support, from the parameters given) along a path from a source to an
/// output. An output sample depends only on the sources from P samples before it to F after it
/// (recursions: up to TemporalSupport::kDecayTolerance of their response), so each chunk equals
/// the same samples of a whole render up to float rounding (tested for every processor alone
/// and for consoles). Memory is that of rendering chunk_samples + P + F samples. The chunks are
/// rendered without gradients.

#include <grafx/render/render.h>

#include <functional>

namespace grafx {

struct ChunkOptions {
  /// Output samples per chunk (the last may be shorter); 2^19 is 11.9 s at 44.1 kHz.
  int64_t chunk_samples = int64_t(1) << 19;
  /// Options of each chunk's render (check_finite is applied once, to the whole sources).
  RenderOptions render;

  /// A whole song's sources at `sample_rate`, from its first sample (where automation curves
  /// start), in chunks of the default size.
  static ChunkOptions whole_song(SampleRate sample_rate);
};

/// The graph's temporal support with these parameters: the largest sum of supports along a path
/// from an `in` to an `out` node (each type's support is the widest over its rows).
TemporalSupport temporal_support(const RenderPlan& plan, const Processors& processors,
                                 const Parameters& parameters);

/// Output chunk [start, end) of a song of `length` samples, and the input samples [first, last)
/// that render it: widened by `support`, clipped to the song.
struct ChunkWindow {
  int64_t start = 0, end = 0, first = 0, last = 0;
  static ChunkWindow of(int64_t start, int64_t chunk_samples, int64_t length,
                        const TemporalSupport& support);
};

/// Renders `sources` (K×C×L or B×K×C×L, as render) chunk by chunk, handing each chunk's outputs
/// ([B×]n_out×C×T) and the index of its first sample to `consume`, in order. Throws what render
/// throws, and RenderError [grafx.render.chunk_size] for chunk_samples < 1.
void render_chunks(const RenderPlan& plan, const Processors& processors,
                   const Parameters& parameters, const at::Tensor& sources,
                   const std::function<void(int64_t start, const at::Tensor& outputs)>& consume,
                   const ChunkOptions& options = {});

/// The whole outputs assembled from chunks: render(...).outputs without the memory of rendering
/// the whole song at once.
at::Tensor render_in_chunks(const RenderPlan& plan, const Processors& processors,
                            const Parameters& parameters, const at::Tensor& sources,
                            const ChunkOptions& options = {});

}  // namespace grafx
