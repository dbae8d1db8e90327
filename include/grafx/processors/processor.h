#pragma once
/// The processor contract.
///
/// A processor is **stateless** between calls and **batch-first**: `forward` takes one tensor
/// per inlet, each `N×C×L` (N nodes of this type, times the source batch), and a dictionary of
/// raw parameters whose tensors all have first dimension N; it returns one tensor per outlet,
/// each `N×C×L`, and optional auxiliary losses, each of shape `[N]` (one value per node). Row n
/// of every output depends only on row n of the inputs and parameters, so the renderer can stack
/// all ready nodes of one type into one call, which is the whole point of grafx.
///
/// Raw parameters are unconstrained reals (friendly to gradient descent); the processor applies
/// its own activations. `parameter_specs()` lists each parameter with its per-node shape, its
/// initial value, and the mappings between raw values and physical units:
///
///   ParameterSpec::raw("log_gain", {2})
///       .physical("gain_db", "dB", units::log_gain_to_db, units::db_to_log_gain)
///       .about("gain of the left and right channel")
///
/// Constant data (noise, windows, filter tables) is built once per processor instance, device
/// and dtype (see ConstantCache), never per call. Everything else about a type (its letter,
/// picture, musical prior, ...) is in its descriptor (grafx/processors/descriptor.h).

#include <grafx/graph/node_types.h>
#include <grafx/tensors.h>

#include <ATen/Tensor.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace grafx {

/// Everything a processor is told when it is made.
struct ProcessorConfig {
  SampleRate sample_rate = 44100;
  /// Options its node type sets (grafx/processors/options.h); the rest keep their defaults.
  ProcessorOptions options;
  /// The graph's types, where a container looks up its members' types; null: the registry's.
  const NodeTypes* types = nullptr;
  /// The node types being made, outermost first (this one last when made by make_processor):
  /// containers refuse members that would contain themselves.
  std::vector<std::string> enclosing_types;
};

/// A map between raw and physical values, elementwise unless a spec says otherwise.
using ValueMap = std::function<at::Tensor(const at::Tensor&)>;

/// One parameter of a processor, built with named steps (see the header comment).
struct ParameterSpec {
  std::string name;            ///< raw parameter name, e.g. "log_threshold"
  std::vector<int64_t> shape;  ///< per node, e.g. {1}, {1024}, {2, 193}
  double init_mean = 0.0;      ///< initial raw values are drawn from N(init_mean, init_std²)
  double init_std  = 0.01;
  std::string physical_name;  ///< e.g. "threshold_db" (units in the name)
  std::string unit;           ///< e.g. "dB"
  std::string description;    ///< one line: what it does, in a mixing engineer's terms
  /// How raw values map to physical ones where that is not plain (e.g. "raw − 6 in log
  /// energy"): for those who set raw values; empty otherwise.
  std::string raw_mapping;
  /// Names of a node's elements where a parameter has several that mean different things
  /// (gain_pan's "left", "right"); empty otherwise.
  std::vector<std::string> element_names;
  double physical_min = -std::numeric_limits<double>::infinity();  ///< range of physical values
  double physical_max = std::numeric_limits<double>::infinity();
  /// How an automation curve of this parameter is interpolated between its points (see
  /// "Automation" in docs/graph-format.md), e.g. "linear in dB": curves are linear in the raw
  /// value, which this says in physical terms. Empty: the processor cannot take per-sample values
  /// of this parameter, and graphs that automate it are refused.
  std::string automation;
  /// Raw values `[N, shape...]` to physical values (any shape with first dimension N).
  ValueMap to_physical;
  /// Physical values to raw values `[N, shape...]`; empty when a physical value does not
  /// determine the raw one (then only raw values can be set).
  ValueMap to_raw;

  /// A parameter with identity mappings (physical = raw) until `physical` says otherwise.
  static ParameterSpec raw(std::string name, std::vector<int64_t> shape);
  ParameterSpec& initial(double mean, double std = 0.01);
  /// Names the physical value; without mappings it is the raw value itself.
  ParameterSpec& physical(std::string physical_name, std::string unit, ValueMap to_physical = {},
                          ValueMap to_raw = {});
  /// Physical values outside [min, max] are refused where users set them (`grafx process`).
  ParameterSpec& range(double min, double max);
  ParameterSpec& about(std::string description);
  ParameterSpec& maps(std::string raw_mapping);
  ParameterSpec& elements(std::vector<std::string> names);
  /// Lets graphs automate the parameter: `forward` then takes its values per sample,
  /// `[N, shape..., L]` (see over_time), interpolated by `rule` (what linear in the raw value
  /// means physically, e.g. "linear in dB").
  ParameterSpec& automatable(std::string rule);

  /// The shape of N nodes' values: [n, shape...].
  std::vector<int64_t> shape_for(int64_t n) const;
  /// Sets `raw` to the raw values of `physical` and returns "", or returns why they cannot be
  /// set (raw untouched): the spec has no to_raw, a value lies outside [physical_min,
  /// physical_max], or the raw values are not finite or do not map back to `physical` (1e-6).
  /// Where users set physical values (`grafx process --set`, Python's `to_raw`).
  std::string raw_of(const at::Tensor& physical, at::Tensor& raw) const;
};

struct ProcessorOutput {
  std::vector<at::Tensor> outputs;  ///< one per outlet, each N×C×L
  TensorDict aux_losses;            ///< e.g. {"radii": [N]}: one value per node
};

/// How far in time an output sample of a processor depends on its inputs: on the samples before
/// it (causal filters, delays, recursions) and after it (zero-phase filters). Chunked rendering
/// (grafx/render/chunked.h) widens every chunk by these supports, summed along the graph's paths,
/// so that a song rendered in pieces equals the song rendered whole. A recursion depends on its
/// whole past; its support is the time its impulse response takes to decay below
/// `kDecayTolerance` (then what is cut off is far below float32's resolution).
struct TemporalSupport {
  /// A support longer than any signal (a pole on the unit circle): chunks become the whole song.
  static constexpr int64_t kUnbounded     = int64_t(1) << 52;
  static constexpr double kDecayTolerance = 1e-9;

  int64_t past_samples   = 0;
  int64_t future_samples = 0;

  /// No dependence on other samples (gains, waveshapers, channel matrices).
  static TemporalSupport pointwise() { return {}; }
  /// Dependence on `past_samples` earlier samples: K − 1 for a causal FIR of K taps, the decay
  /// time of a recursion.
  static TemporalSupport causal(int64_t past_samples);
  /// A zero-phase FIR of `n_taps` (odd) taps, centred on lag 0.
  static TemporalSupport zero_phase(int64_t n_taps);
  /// This processor followed by `next` (the supports add; kUnbounded stays unbounded).
  TemporalSupport then(const TemporalSupport& next) const;
  /// The larger support on each side (parallel paths).
  TemporalSupport widest(const TemporalSupport& other) const;
};

/// The learnable wet amount any node of a graph may carry, `y = w·f(u) + (1 − w)·u` with
/// `w = σ(dry_wet)` (rendered by the render layer for every processor; no processor may declare
/// a parameter of this name). Initial raw value 0: w = 0.5, as in the pruning paper.
ParameterSpec dry_wet_spec();
/// Physical values of raw ones, keyed by physical name, for the specs whose raw names
/// `parameters` holds (the rest are left out).
TensorDict to_physical(const std::vector<ParameterSpec>& specs, const TensorDict& parameters);
/// Whether `raw_name` is the wet amount's raw name ("dry_wet"; no other code spells it).
bool is_wet_amount(const std::string& raw_name);
class Processor;
/// The raw parameters of a node of `processor`: the processor's own, then the wet amount where
/// the node carries one. What every listing, check and setter of a node's parameters uses.
std::vector<ParameterSpec> node_parameter_specs(const Processor& processor, bool dry_wet);
/// A dry/wet node's output, w·processed + (1 − w)·dry with w = σ(raw_wet) ([N, 1, 1], or
/// [N, 1, L] where automated).
at::Tensor mix_dry_wet(const at::Tensor& dry, const at::Tensor& processed,
                       const at::Tensor& raw_wet);

/// The raw name of an automation curve of parameter `name`: "log_gain@curve".
std::string curve_name(const std::string& name);
/// The spec of the automation curves of `spec`'s parameter with `points` points: shape
/// [points, shape...], the same mappings applied to each point, physical name
/// "<physical>@curve".
ParameterSpec curve_spec(const ParameterSpec& spec, int64_t points);
/// A parameter's values as `forward` applies them to N×C×L signals: a static parameter
/// `[N, shape...]` with a time axis of one sample added, `[N, shape..., 1]`; an automated one,
/// `[N, shape..., L]`, as it is.
at::Tensor over_time(const at::Tensor& parameter, const ParameterSpec& spec);

struct StreamSetup;
class NodeStream;

class Processor {
 public:
  virtual ~Processor() = default;

  /// The node type name this processor implements (its registry name).
  virtual std::string name() const = 0;
  virtual std::vector<std::string> inlets() const { return {"main"}; }
  virtual std::vector<std::string> outlets() const { return {"main"}; }
  virtual std::vector<ParameterSpec> parameter_specs() const = 0;
  /// Pure, batch-first processing (see the header comment).
  virtual ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                                  const TensorDict& parameters) const = 0;
  /// forward with a node's dry/wet mix folded in: w·f(x) + (1 − w)·x of the first inlet, for
  /// wet amounts w [N, 1, 1]; the render asks for it where nodes have a dry/wet mix and no
  /// bypass. A processor whose output is a gain or a channel matrix applied to its input folds w
  /// into them, sparing the mix's pass over the signal each way; the default returns nothing,
  /// and the render mixes after forward.
  virtual std::optional<ProcessorOutput> forward_mixed(const std::vector<at::Tensor>& inputs,
                                                       const TensorDict& parameters,
                                                       const at::Tensor& wet) const {
    return std::nullopt;
  }
  /// The temporal support of `forward` with these parameters (N×... raw values, as forward's),
  /// the widest over the N rows. A contract test renders every processor whole and in chunks.
  virtual TemporalSupport temporal_support(const TensorDict& parameters) const = 0;
  /// The streaming form of one node (its raw parameters, N = 1, none automated) for `setup`
  /// (grafx/stream/form.h): linear processors return stream_by_impulse_responses.
  /// Throws ProcessorError [grafx.stream.unsupported] saying why where the processor cannot
  /// stream exactly: the default, for processors without a streaming form.
  virtual std::unique_ptr<NodeStream> make_stream(const TensorDict& parameters,
                                                  const StreamSetup& setup) const;

  /// The node type (name and ports) of this processor.
  NodeType node_type() const;
  /// Physical values of raw parameters, keyed by physical name.
  TensorDict to_physical(const TensorDict& parameters) const;
  /// Throws ProcessorError [grafx.processor.inputs] / [grafx.processor.parameters] unless there
  /// is one input per inlet, all N×C×L alike, and each parameter of the specs is present with
  /// shape [N, spec shape...] (or [N, spec shape..., L] for an automatable one) and nothing
  /// else is. `where` prefixes the message.
  void check_arguments(const std::vector<at::Tensor>& inputs, const TensorDict& parameters,
                       const std::string& where = "") const;
};

}  // namespace grafx
