#pragma once
/// A small multitrack synthesised in code, for the embedded demo and tests: drums (kick, snare,
/// hats), bass, chords and a lead line at 112 BPM in A minor, deterministic for a seed.
///
///   Multitrack song = synthesize_multitrack(24000, 8.0, /*seed=*/1);
///   song.tracks;   // K×1×L mono tracks, peak about 0.5 each

#include <grafx/tensors.h>

#include <ATen/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace grafx {

struct Multitrack {
  std::vector<std::string> names;
  at::Tensor tracks;  ///< K×1×L, float32
  SampleRate sample_rate = 0;
};

Multitrack synthesize_multitrack(SampleRate sample_rate, double seconds, uint64_t seed = 1);

}  // namespace grafx
