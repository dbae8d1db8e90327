// Text descriptions of registered processors (`grafx processors`).

#include <grafx/error.h>
#include <grafx/processors/linear_processor.h>
#include <grafx/processors/registry.h>
#include <grafx/text.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace grafx {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

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

}  // namespace

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
      << "range " << number(spec.physical_min) << " to "
      << with_unit(number(spec.physical_max), spec.unit) << "; initial " << initial_value(spec)
      << " (raw " << spec.init_mean << " ± " << spec.init_std << ")"
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
