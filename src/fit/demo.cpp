#include <grafx/error.h>
#include <grafx/fit/demo.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/render/parameters.h>

#include <ATen/ATen.h>

#include <cmath>
#include <random>

namespace grafx {
namespace {

/// Uniform numbers from a seeded generator, the same on every platform.
struct Random {
  std::mt19937_64 rng;
  double uniform(double lo, double hi) { return lo + (hi - lo) * double(rng() >> 11) * 0x1.0p-53; }
  double log_uniform(double lo, double hi) { return std::exp(uniform(std::log(lo), std::log(hi))); }
};

/// The raw values whose physical values are `target` (same shape as one node's parameter),
/// found by bisection: every physical mapping of a scalar parameter is monotonic.
at::Tensor raw_for(const ParameterSpec& spec, const at::Tensor& target) {
  at::Tensor lo = at::full_like(target, -40.0), hi = at::full_like(target, 40.0);
  auto physical = [&](const at::Tensor& raw) { return spec.to_physical(raw.unsqueeze(0)).squeeze(0); };
  at::Tensor increasing = physical(hi) > physical(lo);
  for (int i = 0; i < 80; ++i) {
    at::Tensor mid = (lo + hi) / 2;
    at::Tensor below = (physical(mid) < target) == increasing;  // the answer lies above mid
    lo = at::where(below, mid, lo);
    hi = at::where(below, hi, mid);
  }
  return (lo + hi) / 2;
}

/// A smooth EQ curve in dB at `hz`: a tilt plus three bells on a log-frequency axis.
at::Tensor eq_curve_db(const at::Tensor& hz, Random& random, double depth_db) {
  at::Tensor octaves = at::log2(hz.clamp_min(20.0) / 1000.0);
  at::Tensor curve = random.uniform(-0.8, 0.8) * octaves;
  for (int bell = 0; bell < 3; ++bell) {
    double centre = std::log2(random.log_uniform(80, 8000) / 1000.0), width = random.uniform(0.4, 1.5);
    curve = curve + random.uniform(-depth_db, depth_db) * at::exp(-(octaves - centre).pow(2) / (2 * width * width));
  }
  return curve;
}

/// The physical setting a musical engineer might choose, per type and physical parameter.
at::Tensor physical_setting(const std::string& type, const ParameterSpec& spec, const at::Tensor& init,
                            bool subgroup, int64_t sample_rate, Random& r) {
  const std::string& p = spec.physical_name;
  auto scalar = [&](double value) { return at::full_like(init, value); };
  if (p == "wet") {
    if (type == "reverb") return scalar(r.uniform(0.1, 0.35));
    if (type == "delay") return scalar(r.uniform(0, 1) < 0.5 ? r.uniform(0.1, 0.3) : 0.02);
    return scalar(0.98);
  }
  if (type == "gain_pan") {
    double level = subgroup ? r.uniform(-3, 0) : r.uniform(-6, 2), pan = subgroup ? 0 : r.uniform(-0.6, 0.6);
    return at::tensor({level - 4 * pan, level + 4 * pan}, init.options());
  }
  if (type == "stereo_imager") return scalar(r.uniform(-4, 3));
  if (type.rfind("eq", 0) == 0) {
    at::Tensor hz = at::arange(init.size(-1), init.options()) * (double(sample_rate) / double(2 * init.size(-1) - 1));
    at::Tensor curve = eq_curve_db(hz, r, subgroup ? 3.0 : 6.0);
    return init.dim() == 2 ? curve.unsqueeze(0).expand_as(init).contiguous() : curve;
  }
  const bool gate = type.rfind("noise_gate", 0) == 0;
  if (p == "threshold_db") return scalar(gate ? r.uniform(-60, -45) : r.uniform(-32, -18));
  if (p == "ratio") return scalar(gate ? r.uniform(2, 4) : r.uniform(2, 6));
  if (p == "knee_db") return scalar(r.uniform(3, 9));
  if (p == "smoothing_ms") return scalar(r.uniform(5, 40));
  if (p == "attack_ms") return scalar(r.uniform(2, 15));
  if (p == "release_ms") return scalar(r.uniform(40, 200));
  if (p == "tap_gain_db") {
    // Echoes in two or three segments per channel, darker with frequency; the rest silent.
    at::Tensor gains = at::full_like(init, -80.0);
    at::Tensor tilt = at::linspace(0, -12, init.size(1), init.options());
    for (int64_t channel = 0; channel < 2; ++channel)
      for (int64_t echo = 1; echo <= 3; ++echo) {
        int64_t segment = echo * int64_t(r.uniform(2, 4)) + channel;
        if (segment < 20) gains[channel * 20 + segment] = tilt - 4.0 * double(echo - 1);
      }
    return gains;
  }
  if (p == "initial_level_db") {
    at::Tensor hz = at::arange(init.size(1), init.options()) * (double(sample_rate) / 384.0);
    at::Tensor darker = -3.0 * at::log2(hz.clamp_min(1000.0) / 1000.0);
    return at::stack({darker, darker - r.uniform(0, 6)});
  }
  if (p == "decay_time_s") {
    double low = r.uniform(0.6, 1.6);
    at::Tensor shorter = at::linspace(low, low * 0.4, init.size(1), init.options());
    return at::stack({shorter, shorter * r.uniform(0.8, 1.0)});
  }
  return at::Tensor();  // keep the initial value (e.g. the delay's in-segment positions)
}

}  // namespace

Parameters musical_parameters(const Graph& console, const Processors& processors, int64_t sample_rate,
                              uint64_t seed) {
  Parameters parameters = create_parameters(console, processors, {seed, at::kFloat, false});
  Random random{std::mt19937_64(seed)};
  for (auto& [type, named] : parameters) {
    auto ids = console.nodes_of_type(type);
    for (const auto& spec : processors.at(type)->parameter_specs()) {
      at::Tensor& values = named.at(spec.name);
      at::Tensor init = values.to(at::kDouble);
      for (size_t row = 0; row < ids.size(); ++row) {
        bool subgroup = console.node(ids[row]).name.rfind("group", 0) == 0;
        at::Tensor target = physical_setting(type, spec, init[int64_t(row)], subgroup, sample_rate, random);
        if (target.defined()) values[int64_t(row)] = raw_for(spec, target.to(at::kDouble)).to(values.scalar_type());
      }
    }
  }
  return parameters;
}

DemoSong make_demo_song(const DemoOptions& options) {
  Multitrack multitrack = synthesize_multitrack(options.sample_rate, options.seconds, options.seed);
  DemoSong song;
  song.track_names = multitrack.names;
  song.sample_rate = options.sample_rate;
  song.tracks = multitrack.tracks.expand({multitrack.tracks.size(0), 2, multitrack.tracks.size(2)}).contiguous();
  ConsoleOptions console;
  console.n_tracks = int64_t(song.track_names.size());
  console.track_groups = {0, 0, 1, 1};  // drums and bass; chords and lead
  console.track_names = song.track_names;
  song.console = build_console(console, registry_node_types()).graph;
  Processors processors = console_processors(song.console.types(), {double(options.sample_rate)});
  song.hidden = musical_parameters(song.console, processors, options.sample_rate, options.seed + 1000);
  RenderPlan plan = make_render_plan(to_tensor(song.console), ScheduleMethod::kOptimal);
  song.mix = render(plan, processors, song.hidden, song.tracks).outputs[0];
  return song;
}

}  // namespace grafx
