// Text descriptions of registered processors (`grafx processors`).

#include <grafx/error.h>
#include <grafx/processors/linear_processor.h>
#include <grafx/processors/registry.h>
#include <grafx/text.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <regex>
#include <sstream>

namespace grafx {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::vector<std::string> sizes;
  for (int64_t n : shape) sizes.push_back(std::to_string(n));
  return "[" + join(sizes) + "]";
}

std::string with_unit(const std::string& value, const std::string& unit) {
  if (unit.empty()) return value;
  return value + (unit.rfind(":", 0) == 0 ? "" : " ") + unit;
}

std::string number(double value) { return significant_digits(value, 4); }

/// "−26.06 dB", or "0.05 … 2.3 ms" when the initial physical values differ.
std::string initial_value(const ParameterSpec& spec) {
  at::Tensor physical = spec.to_physical(at::full(spec.shape_for(1), spec.init_mean, at::kDouble));
  double lo = physical.min().item<double>(), hi = physical.max().item<double>();
  return with_unit(number(lo) + (hi != lo ? " … " + number(hi) : ""), spec.unit);
}

/// How the processor streams (grafx stream, stream/stream.h), with its initial parameters.
std::string streaming(const Processor& processor, SampleRate sample_rate) {
  TensorDict initial;
  for (const auto& spec : processor.parameter_specs())
    initial[spec.name] = at::full(spec.shape_for(1), spec.init_mean, at::kFloat);
  try {
    auto stream = processor.make_stream(
        initial, {sample_rate, 512, std::vector<int64_t>(processor.inlets().size(), 2)});
    const bool linear = dynamic_cast<const LinearProcessor*>(&processor) != nullptr;
    std::vector<std::string> controls;
    for (const StreamControl& control : stream->controls()) controls.push_back(control.name);
    return std::string(controls.empty() && linear ? "by its impulse responses"
                                                  : "sample by sample") +
           ", latency " + std::to_string(stream->latency_samples()) + " samples; " +
           (controls.empty() ? "no controls (plays as made)" : "controls " + join(controls));
  } catch (const Error& e) {
    return "no (" + e.message() + ")";
  }
}

/// Text for a Markdown table cell: "|" would end the cell.
std::string cell(const std::string& text) {
  std::string escaped;
  for (char c : text) escaped += c == '|' ? std::string("\\|") : std::string(1, c);
  return escaped;
}

/// "any", "≥ 0 dB", "≤ 1", "20 … 2e+04 Hz".
std::string range_text(const ParameterSpec& spec) {
  const bool low = std::isfinite(spec.physical_min), high = std::isfinite(spec.physical_max);
  if (!low && !high) return "any";
  if (!high) return "≥ " + with_unit(number(spec.physical_min), spec.unit);
  if (!low) return "≤ " + with_unit(number(spec.physical_max), spec.unit);
  return number(spec.physical_min) + " … " + with_unit(number(spec.physical_max), spec.unit);
}

/// One table row of `spec`, without the types column.
std::string parameter_row(const ParameterSpec& spec) {
  std::vector<std::string> cells = {
      "`" + spec.name + "`",
      shape_text(spec.shape),
      "`" + spec.physical_name + "`" + (spec.unit.empty() ? "" : " (" + spec.unit + ")"),
      range_text(spec),
      initial_value(spec) + " (raw " + number(spec.init_mean) + " ± " + number(spec.init_std) + ")",
      spec.automation.empty() ? "no" : spec.automation,
      spec.description + (spec.raw_mapping.empty() ? "" : "; raw: " + spec.raw_mapping)};
  std::string row = "|";
  for (const auto& text : cells) row += " " + cell(text) + " |";
  return row;
}

}  // namespace

std::string parameter_table(const std::vector<std::string>& types, SampleRate sample_rate) {
  struct Row {
    std::string parameter, text;
    std::vector<std::string> types;
  };
  std::vector<Row> rows;  // grouped by raw name, in the order the names first appear
  for (const auto& type : types) {
    auto processor = make_processor(type, {sample_rate});  // a type and rate that exist
    for (const auto& spec : processor->parameter_specs()) {
      const std::string text = parameter_row(spec);
      auto same =
          std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.text == text; });
      if (same != rows.end()) {
        same->types.push_back(type);
        continue;
      }
      auto after = std::find_if(rows.rbegin(), rows.rend(),
                                [&](const Row& r) { return r.parameter == spec.name; });
      rows.insert(after == rows.rend() ? rows.end() : after.base(), {spec.name, text, {type}});
    }
  }
  const bool several = types.size() > 1;
  std::ostringstream table;
  table << (several ? "| types " : "")
        << "| raw name | shape | physical | range | initial | automation | meaning |\n"
        << (several ? "|---" : "") << "|---|---|---|---|---|---|---|\n";
  for (const Row& row : rows) {
    if (several) {
      std::vector<std::string> names;
      for (const auto& type : row.types) names.push_back("`" + type + "`");
      table << "| " << (row.types.size() == types.size() ? std::string("all") : join(names)) << " ";
    }
    table << row.text << "\n";
  }
  return table.str();
}

std::string with_current_parameter_tables(const std::string& markdown, const std::string& origin) {
  static const std::regex begin(
      R"(<!-- parameters of (.*) at (.*) Hz: generated by grafx processors --update-docs -->)");
  const std::string end = "<!-- end of generated parameters -->";
  std::string updated;
  size_t at           = 0;
  int64_t line_number = 0;
  while (at < markdown.size()) {
    size_t line_end = markdown.find('\n', at);
    if (line_end == std::string::npos) line_end = markdown.size();
    const std::string line = markdown.substr(at, line_end - at);
    ++line_number;
    updated += markdown.substr(at, std::min(line_end + 1, markdown.size()) - at);
    at = std::min(line_end + 1, markdown.size());
    std::smatch marker;
    if (!std::regex_match(line, marker, begin)) continue;
    auto fail = [&](const std::string& why) {
      throw IoError("grafx.io.format", origin + ":" + std::to_string(line_number) + ": " + why);
    };
    const std::string rate = marker[2];
    if (rate.empty() || rate.size() > 7 ||
        rate.find_first_not_of("0123456789") != std::string::npos)
      fail("expected a whole number of Hz, but got \"" + rate + "\"");
    std::vector<std::string> types;
    std::stringstream listed(marker[1]);
    for (std::string type; std::getline(listed, type, ',');) {
      type.erase(0, type.find_first_not_of(' '));
      types.push_back(type);
    }
    if (types.empty()) fail("expected the processor types to table, but got none");
    const size_t closing = markdown.find(end, at);
    if (closing == std::string::npos) fail("a generated table without its \"" + end + "\"");
    line_number += std::count(markdown.begin() + long(at), markdown.begin() + long(closing), '\n');
    updated += parameter_table(types, SampleRate(std::stol(rate))) + "\n";  // ends the table
    at = closing;
  }
  return updated;
}

std::string describe_processor(const ProcessorDescriptor& descriptor, SampleRate sample_rate,
                               bool detailed) {
  auto processor = descriptor.make({sample_rate});
  std::ostringstream s;
  s << descriptor.name << std::string(std::max<size_t>(1, 26 - descriptor.name.size()), ' ')
    << (descriptor.letter ? descriptor.letter : '-') << "  " << descriptor.summary << "\n"
    << "  ports: " << join(processor->inlets()) << " -> " << join(processor->outlets())
    << (descriptor.grafx_name.empty() ? std::string("; not in GRAFX")
                                      : "; GRAFX: " + descriptor.grafx_name)
    << "\n";
  if (!detailed && !descriptor.options.empty()) {
    std::vector<std::string> defaults;
    for (const auto& option : descriptor.options)
      defaults.push_back(option.name + " " + to_json_text(option.default_value));
    s << "  options: " << join(defaults) << "\n";
  }
  if (detailed)
    for (const auto& option : descriptor.options)
      s << "  option " << option.name << " = " << to_json_text(option.default_value) << ": "
        << option.description << "; " << option.accepted() << "\n";
  for (const auto& spec : processor->parameter_specs()) {
    s << "  " << std::left << std::setw(20) << spec.name + " " << std::setw(10)
      << shape_text(spec.shape) + " " << spec.physical_name << " (" << spec.unit
      << "): " << spec.description
      << (spec.raw_mapping.empty() ? "" : " (raw: " + spec.raw_mapping + ")") << "\n";
    if (!detailed) continue;
    s << "  " << std::setw(30) << ""
      << "range " << range_text(spec) << "; initial " << initial_value(spec) << " (raw "
      << spec.init_mean << " ± " << spec.init_std << ")"
      << (spec.to_raw ? "" : "; set by its raw value only") << "; "
      << (spec.automation.empty() ? "not automatable" : "automatable, " + spec.automation) << "\n";
  }
  if (detailed) {
    s << "  streams: " << streaming(*processor, sample_rate) << "\n";
    const ParameterSpec wet = dry_wet_spec();
    s << "  any node may also carry " << wet.physical_name << " (" << wet.unit
      << ", 0 to 1): " << wet.description << "; automatable, " << wet.automation << "\n";
  }
  return s.str();
}

}  // namespace grafx
