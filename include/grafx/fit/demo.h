#pragma once
/// The embedded demo: a synthesised multitrack (drums, bass, chords, lead) mixed through a hidden
/// console with musical settings, for `grafx demo` to fit a fresh console to.
///
///   DemoSong song = make_demo_song({});
///   Fitter fitter(song.console, song.tracks, song.mix, song.sample_rate, options);

#include <grafx/fit/fit.h>
#include <grafx/fit/multitrack.h>
#include <grafx/processors/registry.h>

namespace grafx {

struct DemoOptions {
  SampleRate sample_rate = 24000;
  double seconds         = 8.0;
  uint64_t seed          = 1;  ///< the song's noise and the hidden settings
};

struct DemoSong {
  std::vector<std::string> track_names;
  at::Tensor tracks;  ///< K×2×L (the mono tracks on both channels)
  at::Tensor mix;     ///< 2×L: the tracks through the hidden console
  SampleRate sample_rate = 0;
  Graph console;      ///< drums and bass in one subgroup, chords and lead in another
  Parameters hidden;  ///< the hidden console's settings
};

DemoSong make_demo_song(const DemoOptions& options);

/// Musical random settings for a console's processors, seeded: each node's from its type's
/// musical prior (grafx/processors/descriptor.h: levels and pans, smooth EQ curves, moderate
/// compression, gentle gating, a touch of width, short echoes, a small room); dry/wet nodes
/// mostly wet. Used for hidden consoles in the demo and in tests.
Parameters musical_parameters(const Graph& console, const Processors& processors,
                              SampleRate sample_rate, uint64_t seed);

}  // namespace grafx
