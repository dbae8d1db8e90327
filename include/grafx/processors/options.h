#pragma once
/// Processor options: how a processor is built, fixed for a node type (GRAFX's constructor
/// arguments), as opposed to its parameters, which are learned per node.
///
/// A processor lists its options with their defaults; a graph file's node type sets the ones it
/// changes (docs/graph-format.md, "Configured types"):
///
///   {"name": "warm_drive", "processor": "tanh_distortion",
///    "options": {"use_bias": true, "remove_dc": true}}
///
/// and the processor reads them, defaults filled in, when it is made:
///
///   static std::vector<OptionSpec> option_specs() {
///     return {OptionSpec::flag("remove_dc", false, "subtract each channel's mean first")};
///   }
///   ProcessorOptions options = resolve_options(option_specs(), config.options);
///   bool remove_dc = option_flag(options, "remove_dc");

#include <grafx/graph/node_types.h>

#include <string>
#include <vector>

namespace grafx {

struct OptionSpec {
  enum class Kind { kFlag, kNumber, kInteger, kChoice, kNames };

  std::string name;
  Kind kind = Kind::kFlag;
  OptionValue default_value;
  std::vector<std::string> choices;  ///< the values a choice may take
  double min = 0, max = 0;           ///< range of a number or integer
  std::string description;

  static OptionSpec flag(std::string name, bool default_value, std::string description);
  static OptionSpec number(std::string name, double default_value, double min, double max,
                           std::string description);
  static OptionSpec integer(std::string name, int64_t default_value, int64_t min, int64_t max,
                            std::string description);
  static OptionSpec choice(std::string name, std::string default_value,
                           std::vector<std::string> choices, std::string description);
  /// A list of node type names (a container's members).
  static OptionSpec names(std::string name, std::vector<std::string> default_value,
                          std::string description);

  /// "true or false", "a number in [0, 2000]", "one of hard, quadratic, exponential", ...
  std::string accepted() const;
};

/// The options `given`, checked against `specs`, with every option left out at its default.
/// Throws ProcessorError [grafx.processor.options] naming the option and what it accepts: an
/// unknown name (listing the known ones), a value of the wrong kind, outside its range, not an
/// integer, or not one of its choices.
ProcessorOptions resolve_options(const std::vector<OptionSpec>& specs,
                                 const ProcessorOptions& given);

/// Values of resolved options (resolve_options); throw std::out_of_range for an absent name.
bool option_flag(const ProcessorOptions& options, const std::string& name);
double option_number(const ProcessorOptions& options, const std::string& name);
const std::string& option_choice(const ProcessorOptions& options, const std::string& name);
const std::vector<std::string>& option_names(const ProcessorOptions& options,
                                             const std::string& name);

}  // namespace grafx
