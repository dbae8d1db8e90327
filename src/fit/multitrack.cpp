#include <grafx/error.h>
#include <grafx/fit/multitrack.h>

#include <ATen/ATen.h>

#include <cmath>
#include <random>

namespace grafx {
namespace {

constexpr double kPi = 3.14159265358979323846;

double midi_hz(double note) { return 440.0 * std::pow(2.0, (note - 69.0) / 12.0); }

/// Uniform noise in [-1, 1), the same on every platform.
struct Noise {
  std::mt19937_64 rng;
  double operator()() { return double(rng() >> 11) * 0x1.0p-52 - 1.0; }
};

void normalise(std::vector<float>& track, double peak) {
  double most = 1e-9;
  for (float s : track) most = std::max(most, double(std::abs(s)));
  for (float& s : track) s = float(s * peak / most);
}

}  // namespace

Multitrack synthesize_multitrack(SampleRate sample_rate, double seconds, uint64_t seed) {
  if (sample_rate < 8000 || seconds <= 0)
    throw FitError("grafx.fit.options",
                   "a synthesised multitrack needs a sample rate of at least 8000 Hz and a "
                   "positive duration");
  const int64_t n = int64_t(seconds * double(sample_rate));
  const double sr = double(sample_rate), beat = 60.0 / 112.0;
  Noise noise{std::mt19937_64(seed)};
  const size_t length = static_cast<size_t>(n);
  std::vector<float> drums(length), bass(length), chords(length), lead(length);
  auto add = [&](std::vector<float>& track, double start_s, double length_s, auto&& voice) {
    int64_t begin = int64_t(start_s * sr), end = std::min(n, begin + int64_t(length_s * sr));
    for (int64_t i = std::max<int64_t>(begin, 0); i < end; ++i)
      track[size_t(i)] += float(voice(double(i - begin) / sr));
  };
  // Chord roots per bar (Am, F, C, G) and their triads (MIDI notes).
  const double roots[4]     = {45, 41, 48, 43};
  const double triads[4][3] = {{57, 60, 64}, {53, 57, 60}, {55, 60, 64}, {55, 59, 62}};
  const double melody[16]   = {76, 74, 72, 74, 76, 76, 76, 0, 74, 74, 74, 0, 76, 79, 79, 0};
  double hat_state          = 0;
  for (int64_t b = 0; double(b) * beat < seconds; ++b) {
    const double t = double(b) * beat;
    const int bar  = int((b / 4) % 4);
    // Drums: kick on 1 and 3, snare on 2 and 4, hats on eighths.
    if (b % 2 == 0)
      add(drums, t, 0.35, [&](double u) {
        return 0.9 * std::sin(2 * kPi * (50 * u + 60 * (1 - std::exp(-u * 30)) / 30)) *
               std::exp(-u * 9);
      });
    else
      add(drums, t, 0.25, [&](double u) {
        return (0.5 * noise() + 0.3 * std::sin(2 * kPi * 190 * u)) * std::exp(-u * 18);
      });
    for (double half : {0.0, 0.5})
      add(drums, t + half * beat, 0.06, [&](double u) {
        double white = noise();
        double high  = white - hat_state;  // a one-zero high-pass: hats are bright
        hat_state    = white;
        return 0.25 * high * std::exp(-u * 60);
      });
    // Bass: a saw on the bar's root, eighth notes, darkened by a one-pole low-pass.
    for (double half : {0.0, 0.5}) {
      double f = midi_hz(roots[bar]), low = 0;
      add(bass, t + half * beat, beat * 0.45, [&](double u) {
        double saw = 2 * std::fmod(f * u, 1.0) - 1;
        low += 0.15 * (saw - low);
        return 0.8 * low * std::min(1.0, u * 200) * std::exp(-u * 3);
      });
    }
    // Chords: triangle-wave triads on every beat, soft attack.
    for (double note : triads[bar])
      add(chords, t, beat * 0.95, [&](double u) {
        double phase = std::fmod(midi_hz(note) * u, 1.0);
        return 0.3 * (4 * std::abs(phase - 0.5) - 1) * std::min(1.0, u * 20) * std::exp(-u * 1.5);
      });
    // Lead: sines with vibrato and a second harmonic, a melody in quarter notes.
    double note = melody[b % 16];
    if (note > 0)
      add(lead, t, beat * 0.9, [&](double u) {
        double f     = midi_hz(note) * (1 + 0.006 * std::sin(2 * kPi * 5.5 * u));
        double phase = 2 * kPi * f * u;
        return (0.6 * std::sin(phase) + 0.2 * std::sin(2 * phase)) * std::min(1.0, u * 30) *
               std::exp(-u * 1.2);
      });
  }
  Multitrack song;
  song.sample_rate = sample_rate;
  song.names       = {"drums", "bass", "chords", "lead"};
  std::vector<at::Tensor> tracks;
  for (auto* track : {&drums, &bass, &chords, &lead}) {
    normalise(*track, 0.5);
    tracks.push_back(at::tensor(*track, at::kFloat).view({1, n}));
  }
  song.tracks = at::stack(tracks);
  return song;
}

}  // namespace grafx
