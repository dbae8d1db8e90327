// The one list of grafx's processors. Adding a processor: see CONTRIBUTING.md.

#include <grafx/error.h>
#include <grafx/processors/registry.h>

#include <grafx/processors/channel_converters.h>
#include <grafx/processors/compressor.h>
#include <grafx/processors/containers.h>
#include <grafx/processors/cookbook_filters.h>
#include <grafx/processors/crossover.h>
#include <grafx/processors/delay.h>
#include <grafx/processors/distortion.h>
#include <grafx/processors/eq.h>
#include <grafx/processors/filtered_noise_reverb.h>
#include <grafx/processors/fir_filters.h>
#include <grafx/processors/free_filters.h>
#include <grafx/processors/gain_pan.h>
#include <grafx/processors/graphic_eq.h>
#include <grafx/processors/noise_gate.h>
#include <grafx/processors/parametric_eq.h>
#include <grafx/processors/reverb.h>
#include <grafx/processors/send.h>
#include <grafx/processors/stereo_imager.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <set>
#include <sstream>

namespace grafx {
namespace {

std::vector<ProcessorDescriptor> built_in() {
  return {
      eq_descriptor(),
      eq_stereo_descriptor(),
      eq_midside_descriptor(),
      compressor_descriptor(),
      compressor_ballistics_descriptor(),
      noise_gate_descriptor(),
      noise_gate_ballistics_descriptor(),
      stereo_imager_descriptor(),
      gain_pan_descriptor(),
      delay_descriptor(),
      reverb_descriptor(),
      filtered_noise_reverb_descriptor(),
      lowpass_descriptor(),
      highpass_descriptor(),
      bandpass_descriptor(),
      bandreject_descriptor(),
      allpass_descriptor(),
      peaking_descriptor(),
      low_shelf_descriptor(),
      high_shelf_descriptor(),
      biquad_descriptor(),
      pole_zero_descriptor(),
      state_variable_filter_descriptor(),
      parametric_eq_descriptor(),
      parametric_eq_stereo_descriptor(),
      parametric_eq_midside_descriptor(),
      graphic_eq_descriptor(),
      graphic_eq_third_octave_descriptor(),
      fir_eq_descriptor(),
      fir_filter_descriptor(),
      crossover_descriptor(),
      crossover_3band_descriptor(),
      sidechain_compressor_descriptor(),
      sidechain_gate_descriptor(),
      send_descriptor(),
      mono_to_stereo_descriptor(),
      stereo_to_mid_side_descriptor(),
      mid_side_to_stereo_descriptor(),
      tanh_distortion_descriptor(),
      piecewise_tanh_distortion_descriptor(),
      power_distortion_descriptor(),
      chebyshev_distortion_descriptor(),
      serial_chain_descriptor(),
      parallel_mix_descriptor(),
      multiband_descriptor(),
  };
}

/// Utility types' letters, which no processor may take.
char utility_letter(const std::string& name) {
  if (name == "in") return 'i';
  if (name == "out") return 'o';
  if (name == "mix") return 'm';
  return 0;
}

/// Checks `d` against the rules of register_processor and the descriptors [others, others + n).
void check_descriptor(const ProcessorDescriptor& d, const ProcessorDescriptor* others, size_t n) {
  auto fail = [&](const std::string& what) {
    throw ProcessorError("grafx.processor.registry",
                         "processor \"" + d.name + "\" cannot be registered: " + what);
  };
  if (d.name.empty() || utility_letter(d.name)) fail("expected a name other than in, out and mix");
  if (d.letter != 0 && !std::isalpha(static_cast<unsigned char>(d.letter)))
    fail("expected a letter a-z or A-Z (or none), but got '" + std::string(1, d.letter) + "'");
  for (const char* utility : {"in", "out", "mix"})
    if (d.letter == utility_letter(utility))
      fail(std::string("letter '") + d.letter + "' is the " + utility + " type's");
  for (const ProcessorDescriptor* other = others; other != others + n; ++other) {
    if (other->name == d.name) fail("the name is taken");
    if (d.letter != 0 && other->letter == d.letter)
      fail(std::string("letter '") + d.letter + "' is taken by \"" + other->name + "\"");
  }
  if (!d.make) fail("expected a make function");
  std::unique_ptr<Processor> processor = d.make(ProcessorConfig());
  if (processor->name() != d.name) fail("its processor calls itself \"" + processor->name() + "\"");
  if (processor->inlets().empty() || processor->outlets().empty())
    fail("expected at least one inlet and one outlet");
  std::set<std::string> names;
  for (const auto& spec : processor->parameter_specs()) {
    std::string where = "parameter \"" + spec.name + "\": ";
    if (is_wet_amount(spec.name)) fail(where + "the name is reserved for the graph's dry/wet");
    if (!names.insert(spec.name).second) fail(where + "listed twice");
    if (spec.physical_name.empty() || spec.description.empty() || !spec.to_physical)
      fail(where + "expected a physical name, a description and a mapping to physical values");
    // Users set parameters by either name (grafx process --set): one name must not mean both a
    // raw and a different physical value.
    at::Tensor probe = at::full(spec.shape_for(1), 0.3, at::kDouble);
    if (spec.physical_name == spec.name && !at::allclose(spec.to_physical(probe), probe))
      fail(where + "its physical value has a mapping, so it needs a name other than its raw one");
    for (int64_t size : spec.shape)
      if (size < 1) fail(where + "expected a shape of positive sizes");
  }
}

std::vector<ProcessorDescriptor>& registry() {
  static std::vector<ProcessorDescriptor> descriptors = built_in();
  // The built-in descriptors are checked on first use, outside the initialisation above:
  // checking makes processors, and containers look their members up here while it runs.
  static std::atomic<bool> checking{false};
  if (!checking.exchange(true))
    for (size_t i = 0; i < descriptors.size(); ++i)
      check_descriptor(descriptors[i], descriptors.data(), i);
  return descriptors;
}

std::string known_processors() {
  std::string known;
  for (const auto& d : registry()) known += (known.empty() ? "" : ", ") + d.name;
  return known;
}

}  // namespace

const std::vector<ProcessorDescriptor>& processor_registry() { return registry(); }

void register_processor(ProcessorDescriptor descriptor) {
  check_descriptor(descriptor, registry().data(), registry().size());
  registry().push_back(std::move(descriptor));
}

const ProcessorDescriptor* find_processor(const std::string& name) {
  for (const auto& d : registry())
    if (d.name == name) return &d;
  return nullptr;
}

const ProcessorDescriptor& processor_descriptor(const std::string& name) {
  const ProcessorDescriptor* d = find_processor(name);
  if (!d)
    throw ProcessorError("grafx.processor.unknown", "no processor implements node type \"" + name +
                                                        "\"; processors: " + known_processors());
  return *d;
}

namespace {

void check_sample_rate(SampleRate sample_rate, const std::string& where) {
  if (sample_rate < 1 || sample_rate > kMaxSampleRate)
    throw ProcessorError("grafx.processor.config", where + ": expected a sample rate of 1 to " +
                                                       std::to_string(kMaxSampleRate) +
                                                       " Hz, but got " +
                                                       std::to_string(sample_rate) + " Hz");
}

}  // namespace

std::unique_ptr<Processor> make_processor(const std::string& name, const ProcessorConfig& config) {
  const ProcessorDescriptor& descriptor = processor_descriptor(name);
  check_sample_rate(config.sample_rate, "processor \"" + name + "\"");
  return descriptor.make(config);
}

NodeTypes registry_node_types() {
  NodeTypes types;
  for (const auto& d : registry()) types.add(d.make(ProcessorConfig())->node_type());
  return types;
}

std::unique_ptr<Processor> make_processor(const NodeType& type, const ProcessorConfig& config) {
  const std::string where = "node type \"" + type.name + "\"";
  if (!type.processor.empty() && !find_processor(type.processor))
    throw ProcessorError("grafx.processor.unknown", where + ": unknown processor \"" +
                                                        type.processor +
                                                        "\"; processors: " + known_processors());
  const ProcessorDescriptor& descriptor = processor_descriptor(type.processor_name());
  check_sample_rate(config.sample_rate, where);
  std::unique_ptr<Processor> processor;
  try {
    ProcessorConfig own = config;
    own.options         = type.options;
    own.enclosing_types.push_back(type.name);
    processor = descriptor.make(own);
  } catch (const ProcessorError& e) {
    throw ProcessorError(e.code(), where + ": " + e.message());
  }
  NodeType ports = processor->node_type();
  if (ports.inlets != type.inlets || ports.outlets != type.outlets) {
    auto text = [](const NodeType& t) {
      std::string out;
      for (const auto& p : t.inlets) out += (out.empty() ? "" : ", ") + p;
      out += " -> ";
      for (size_t i = 0; i < t.outlets.size(); ++i) out += (i ? ", " : "") + t.outlets[i];
      return out;
    };
    throw ProcessorError(
        "grafx.processor.ports",
        where + " has ports (" + text(type) + ") but its processor has (" + text(ports) + ")");
  }
  return processor;
}

Processors make_processors(const NodeTypes& types, const ProcessorConfig& config) {
  Processors processors;
  ProcessorConfig with_types = config;
  with_types.types           = &types;
  for (TypeId t = NodeTypes::kMix + 1; t < types.size(); ++t)
    processors[types.name(t)] = make_processor(types[t], with_types);
  return processors;
}

char type_letter(const std::string& type_name) {
  if (char letter = utility_letter(type_name)) return letter;
  const ProcessorDescriptor* d = find_processor(type_name);
  if (d && d->letter) return d->letter;
  return type_name.empty() ? '?' : type_name[0];
}

char type_letter(const NodeType& type) { return type_letter(type.processor_name()); }

std::vector<std::string> chain_from_letters(const std::string& letters) {
  auto fail = [](const std::string& what) {
    std::string known = "m mix";
    for (const auto& d : registry())
      if (d.letter) known += std::string(", ") + d.letter + " " + d.name;
    throw GraphError("grafx.graph.unknown_type", what + "; letters: " + known);
  };
  if (letters.empty()) fail("expected a chain of type letters, but got none");
  std::vector<std::string> chain;
  for (char letter : letters) {
    if (letter == 'm') {
      chain.push_back("mix");
      continue;
    }
    auto it = std::find_if(registry().begin(), registry().end(),
                           [&](const ProcessorDescriptor& d) { return d.letter == letter; });
    if (it == registry().end())
      fail("chain letter '" + std::string(1, letter) + "' names no processor");
    chain.push_back(it->name);
  }
  return chain;
}

std::vector<std::string> parse_chain(const std::string& text, const NodeTypes& types) {
  if (text.find(',') == std::string::npos && !types.contains(text)) return chain_from_letters(text);
  std::vector<std::string> names;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    if (item.size() == 1 && !types.contains(item))
      names.push_back(chain_from_letters(item)[0]);
    else
      names.push_back(types.name(types.id(item)));  // throws for unknown names
  }
  if (names.empty() || text.back() == ',')
    throw GraphError(
        "grafx.graph.unknown_type",
        "expected a chain of type letters or comma-separated names, but got \"" + text + "\"");
  return names;
}

std::vector<std::string> default_console_chain() {
  std::vector<const ProcessorDescriptor*> placed;
  for (const auto& d : registry())
    if (d.console_position > 0) placed.push_back(&d);
  std::stable_sort(placed.begin(), placed.end(), [](const auto* a, const auto* b) {
    return a->console_position < b->console_position;
  });
  std::vector<std::string> chain;
  for (const auto* d : placed) chain.push_back(d->name);
  return chain;
}

std::vector<std::string> default_fit_chain() {
  std::vector<std::string> chain;
  for (const std::string& type : default_console_chain())
    if (type == "eq")  // a channel strip's EQ for the FIR EQ: a high-pass, then bells and shelves
      chain.insert(chain.end(), {"highpass", "parametric_eq"});
    else
      chain.push_back(type);
  return chain;
}

std::vector<std::string> default_fit_master_chain() { return {"compressor_ballistics"}; }

const std::vector<std::pair<std::string, std::string>>& grafx_classes_without_a_type() {
  static const std::vector<std::pair<std::string, std::string>> classes = {
      {"DryWet", "the node flag dry_wet: any node renders w*f(u) + (1 - w)*u, w = sigmoid(raw)"},
      {"GainStagingRegularization",
       "the fit's gain-staging regulariser, on the types whose descriptors ask for it"},
  };
  return classes;
}

std::map<std::string, double> random_pruning_rates() {
  std::map<std::string, double> rates;
  for (const auto& d : registry())
    if (d.random_pruning_rate > 0) rates[d.name] = d.random_pruning_rate;
  return rates;
}

}  // namespace grafx
