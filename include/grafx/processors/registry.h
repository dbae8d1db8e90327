#pragma once
/// The processor registry: grafx's processors (the one list in src/processors/registry.cpp),
/// plus any registered at run time, from which node types, chain letters, the default console,
/// random pruning, pictures, listings and the contract tests are generated.
///
///   auto eq = make_processor("eq", {/*sample_rate=*/30000});
///   Processors processors = make_processors(graph.types(), {30000});
///   auto chain = chain_from_letters("ecg");             // eq, compressor, gain_pan
///
/// A processor defined outside the library registers itself once, e.g. from a static object:
///
///   static ProcessorRegistration chorus(chorus_descriptor());

#include <grafx/graph/node_types.h>
#include <grafx/processors/descriptor.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace grafx {

/// Every registered processor, in registry order.
const std::vector<ProcessorDescriptor>& processor_registry();

/// Adds a processor type. Throws ProcessorError [grafx.processor.registry] naming what is wrong:
/// a name or letter already taken, a letter that is not an ASCII letter (a-z, A-Z) or is one of
/// the utility types' (i in, o out, m mix), no `make`, a processor whose name differs from the
/// descriptor's, a parameter named "dry_wet" (the graph's own), or a parameter spec without a
/// physical name, description or mapping.
void register_processor(ProcessorDescriptor descriptor);

/// Registers a descriptor when constructed (for static registration objects).
struct ProcessorRegistration {
  explicit ProcessorRegistration(ProcessorDescriptor descriptor) {
    register_processor(std::move(descriptor));
  }
};

/// The descriptor of a registered type, or nullptr.
const ProcessorDescriptor* find_processor(const std::string& name);
/// The descriptor of a registered type; throws ProcessorError [grafx.processor.unknown] naming
/// the known processors.
const ProcessorDescriptor& processor_descriptor(const std::string& name);

/// The highest sample rate processors are made for (8 × 192 kHz).
inline constexpr SampleRate kMaxSampleRate = 1'536'000;

/// Throws ProcessorError [grafx.processor.unknown] naming the known processors, and
/// [grafx.processor.config] for a sample rate outside [1, kMaxSampleRate].
std::unique_ptr<Processor> make_processor(const std::string& name, const ProcessorConfig& config);
/// The processor of a node type: its processor with its options (those of `config` are
/// replaced). Throws ProcessorError [grafx.processor.unknown] for an unknown processor,
/// [grafx.processor.options] for options it does not take, and [grafx.processor.ports] when the
/// type's ports differ from the processor's; each message names the type.
std::unique_ptr<Processor> make_processor(const NodeType& type, const ProcessorConfig& config);

/// The utility types plus every registered processor's type (name and ports).
NodeTypes registry_node_types();

/// Processors by node type name.
using Processors = std::map<std::string, std::shared_ptr<const Processor>>;

/// One processor for each non-utility type of `types` (make_processor of each type).
Processors make_processors(const NodeTypes& types, const ProcessorConfig& config);

/// The letter of a node type: `i`, `o`, `m` for in, out and mix, a registered type's own
/// letter, and the first character of any other name.
char type_letter(const std::string& type_name);
/// The letter of a graph's type: a configured type's is its processor's (a serial chain "strip"
/// draws as A), any other's as type_letter(name).
char type_letter(const NodeType& type);

/// Type names of chain letters ("ecnsgdr" -> eq, compressor, ...; "m" -> mix). Throws
/// GraphError [grafx.graph.unknown_type] for an empty chain or a letter of no processor, listing
/// the letters.
std::vector<std::string> chain_from_letters(const std::string& letters);

/// A chain from text: type letters ("ecnsgdr") or comma-separated type names or letters
/// ("eq,compressor,r"; names of `types`, which may declare configured types and containers:
/// "strip,gain_pan"). A processor without a letter is named. Throws GraphError
/// [grafx.graph.unknown_type] for an empty item, an unknown letter or an unknown name.
std::vector<std::string> parse_chain(const std::string& text, const NodeTypes& types);

/// The default chain of console tracks and subgroups: the registered types with a console
/// position, in that order (the paper's e-c-n-s-g-d-r).
std::vector<std::string> default_console_chain();

/// The chain `grafx fit` builds by default: the paper's with a channel strip's EQ in the place of
/// its 1,024-point FIR EQ, a high-pass and then a parametric EQ (h-q-c-n-s-g-d-r). Against mixes
/// by hidden producers it fits lower at equal time, with curves an engineer reads
/// (docs/benchmarks.md, "Hidden producers").
std::vector<std::string> default_fit_chain();

/// The master bus `grafx fit` builds by default: a glue compressor with attack/release ballistics
/// (compressor_ballistics), for the bus compression and limiting of finished mixes, which no
/// track's processors can draw (docs/benchmarks.md, "Hidden producers").
std::vector<std::string> default_fit_master_chain();

/// A processor for listings: name, letter, summary, ports, and each parameter's raw name and
/// shape, physical name, unit and meaning; `detailed` adds ranges and initial values.
std::string describe_processor(const ProcessorDescriptor& descriptor, SampleRate sample_rate,
                               bool detailed);

/// The parameter table of the processor documentation (Markdown) for the registered `types` made
/// at `sample_rate`: a row per parameter of each type (raw name, shape, physical name and unit,
/// range, initial value, automation, meaning with its raw mapping), in the types' order; rows
/// alike in several types are one, and with more than one type a first column names the types
/// of each row ("all" for every one). Written from the specs alone (`parameter_specs()`), so the
/// docs cannot round or describe a parameter otherwise than the code.
std::string parameter_table(const std::vector<std::string>& types, SampleRate sample_rate);

/// `markdown` with each generated parameter table brought up to date: the text between a line
/// "<!-- parameters of TYPE, TYPE at RATE Hz: generated by grafx processors --update-docs -->"
/// and the next "<!-- end of generated parameters -->" becomes parameter_table(types, rate) and
/// an empty line.
/// Throws IoError [grafx.io.format] naming `origin` and the line for a marker without its end,
/// without types or with a rate that is not a whole number of Hz, and what make_processor
/// throws for an unknown type or a rate outside [1, kMaxSampleRate].
std::string with_current_parameter_tables(const std::string& markdown, const std::string& origin);

/// GRAFX's exported classes that are features of every node or of the fit here rather than
/// processors (DryWet, GainStagingRegularization), each with where to find it.
const std::vector<std::pair<std::string, std::string>>& grafx_classes_without_a_type();

/// The probability of bypassing each type's nodes in `prune_randomly` (the registered rates).
std::map<std::string, double> random_pruning_rates();

}  // namespace grafx
