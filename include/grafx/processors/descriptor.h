#pragma once
/// Processor descriptors: the one place that says everything the rest of grafx knows about a
/// processor type. Consoles, the demo, response pictures, drawings, listings, random pruning and
/// the generated contract tests read descriptors from the registry (registry.h); no other file
/// tests a processor's name, but for the graph's one rule about sends (kSendProcessor in
/// graph/node_types.h: a bypassed send passes nothing), which the graph layer must know alone.
///
/// Each processor's source file defines its descriptor next to its math:
///
///   ProcessorDescriptor gain_pan_descriptor() {
///     ProcessorDescriptor d = ProcessorDescriptor::of<GainPan>("gain_pan", 'g');
///     d.summary = "gain/pan: a gain per channel of a stereo signal";
///     d.response = ResponsePicture::kStereoField;
///     d.console_position = 5;
///     d.random_pruning_rate = 0.51;
///     d.musical_prior = [](const PriorContext& c) { ... return TensorDict{{"gain_db", ...}}; };
///     return d;
///   }
///
/// Ports and parameter specs are the processor's own (`make(config)->parameter_specs()`): they
/// may depend on the sample rate.

#include <grafx/processors/options.h>
#include <grafx/processors/processor.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>

namespace grafx {

/// How `grafx processors NAME --response` pictures a type (see io/processor_response.h).
enum class ResponsePicture {
  kMagnitude,           ///< one magnitude response (a filter on every channel)
  kMagnitudeLeftRight,  ///< magnitude responses of the left and right filters
  kMagnitudeMidSide,    ///< magnitude responses of the mid and side filters
  kStaticCurve,         ///< output level against a constant input level (dynamics)
  kEnergyDecay,         ///< Schroeder energy decay of the impulse responses (reverbs)
  kStereoField,         ///< output level per channel for a source panned across the input
  kImpulse,             ///< left and right impulse responses
  kBands,               ///< magnitude responses of every outlet and of their sum (crossovers)
};

/// Uniform numbers from a seeded generator, the same on every platform.
class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  double uniform(double lo, double hi) { return lo + (hi - lo) * double(rng_() >> 11) * 0x1.0p-53; }
  double log_uniform(double lo, double hi) { return std::exp(uniform(std::log(lo), std::log(hi))); }

 private:
  std::mt19937_64 rng_;
};

/// What a musical prior is told about the node it sets.
struct PriorContext {
  const Processor& processor;
  SampleRate sample_rate;
  bool subgroup;  ///< the node processes a subgroup (a sum of tracks), not a single track
  Random& random;
};

/// Physical settings a mixing engineer might choose for one node, keyed by physical name, each
/// of the parameter's per-node shape; a name left out keeps its initial value. The key "wet"
/// sets the node's dry/wet amount (in [0, 1]) when it has one.
using MusicalPrior = std::function<TensorDict(const PriorContext&)>;

/// How closely the contract tests compare a processor's gradients with finite differences.
struct GradientCheck {
  /// Parameters whose gradient is a surrogate by design (e.g. straight-through), not a
  /// derivative of the output: only checked to be finite by the contract tests.
  std::set<std::string> surrogate_parameters;
  double relative_tolerance = 1e-6;
  double absolute_tolerance = 1e-9;
};

struct ProcessorDescriptor {
  std::string name;  ///< node type name, e.g. "eq"
  /// Optional chain letter (`--chain ecg`, drawings, schedules): unique, a-z or A-Z; 0 for none
  /// (chains name the type, `--chain eq,my_type`; drawings show its first character).
  char letter = 0;
  std::string summary;  ///< one line for listings
  /// The GRAFX classes it corresponds to (e.g. "Compressor, ApproxCompressor"), for users
  /// coming from GRAFX, ", " between several; empty
  /// for processors GRAFX has no counterpart of (crossovers, sidechain dynamics, sends).
  std::string grafx_name;
  std::function<std::unique_ptr<Processor>(const ProcessorConfig&)> make;
  /// The options `make` reads from its config (the processor's own list, for listings).
  std::vector<OptionSpec> options;
  ResponsePicture response = ResponsePicture::kImpulse;
  /// Settings of hidden consoles (the demo, tests); empty: initial values.
  MusicalPrior musical_prior;
  /// Position in the default console chain (1 first); 0: not in it.
  int console_position = 0;
  /// Fits regularise |level out − level in| of these nodes (the pruning paper's gain staging).
  bool gain_staging = false;
  /// A raw parameter [2] that scales the left and right output by e^raw (gain_pan's log_gain):
  /// the fit's least-squares initialisation sets each track's level and side through it.
  std::string channel_gain_parameter;
  /// A raw parameter [..., n] of natural-log magnitudes at the frequencies k·sr/(2n − 1),
  /// k = 0…n − 1, that multiply the signal's spectrum (the zero-phase EQs' log_magnitude): the
  /// fit's initialisation starts each track's first such node from smoothed spectral ratios.
  std::string spectral_gain_parameter;
  /// Where a fit that initialises from the data starts this type's nodes, in physical settings
  /// keyed as the musical prior's ("wet" for the dry/wet amount); empty: the specs' initial
  /// values. For types whose initial values are far from any mix (dynamics smoothing in
  /// microseconds, a gate that mutes quiet tracks, a high-pass at 1 kHz).
  MusicalPrior fit_start;
  /// Probability that `prune_randomly` bypasses a node (the paper's pruning ratios).
  double random_pruning_rate = 0.0;
  GradientCheck gradient_check;

  /// A descriptor whose `make` builds P(config, options...).
  template <class P, class... Options>
  static ProcessorDescriptor of(std::string name, char letter, Options... options) {
    ProcessorDescriptor d;
    d.name   = std::move(name);
    d.letter = letter;
    d.make = [=](const ProcessorConfig& config) { return std::make_unique<P>(config, options...); };
    return d;
  }
};

}  // namespace grafx
