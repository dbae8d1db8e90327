// Values typed on the command line for a processor's parameters (`processors --param`,
// `process --set`).

#include "parameter_values.h"
#include "arguments.h"

#include <grafx/error.h>
#include <grafx/processors/parameter_values.h>
#include <grafx/render/type_parameters.h>
#include <grafx/text.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace grafx::cli {
namespace {

/// Finite numbers of a comma-separated list; throws through `fail`.
std::vector<double> parse_numbers(const std::string& text,
                                  const std::function<void(const std::string&)>& fail) {
  std::vector<double> numbers;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    std::optional<double> number = parse_finite(item);
    if (!number) fail("\"" + item + "\" is not a finite number");
    numbers.push_back(*number);
  }
  if (numbers.empty()) fail("expected a value");
  return numbers;
}

/// `numbers` spread over `length` points by linear interpolation (one number: constant).
at::Tensor spread(const std::vector<double>& numbers, int64_t length) {
  at::Tensor given = at::tensor(numbers, at::kDouble);
  if (numbers.size() == 1) return given.expand({length});
  at::Tensor position = at::linspace(0, double(numbers.size() - 1), length, at::kDouble);
  at::Tensor below    = position.floor().clamp_max(double(numbers.size() - 2)).to(at::kLong);
  at::Tensor t        = position - below;
  return given.index_select(0, below) * (1 - t) + given.index_select(0, below + 1) * t;
}

}  // namespace

void fill_values(at::Tensor& values, const std::string& text,
                 const std::function<void(const std::string&)>& fail) {
  const int64_t length = values.size(-1), n_rows = values.numel() / length;
  std::vector<std::string> rows;
  std::stringstream list(text);
  for (std::string row; std::getline(list, row, ';');) rows.push_back(row);
  if (rows.size() != 1 && int64_t(rows.size()) != n_rows)
    fail("expected one list of values or " + std::to_string(n_rows) +
         " separated by ';', but got " + std::to_string(rows.size()));
  at::Tensor flat = values.view({n_rows, length});
  for (int64_t r = 0; r < n_rows; ++r) {
    std::vector<double> numbers = parse_numbers(rows[rows.size() == 1 ? 0 : size_t(r)], fail);
    if (int64_t(numbers.size()) > length)
      fail("expected at most " + std::to_string(length) + " values per row, but got " +
           std::to_string(numbers.size()));
    flat[r].copy_(spread(numbers, length));
  }
}

ProcessorOptions parse_options(const ProcessorDescriptor& descriptor,
                               const std::vector<std::string>& assignments,
                               const std::string& option) {
  ProcessorOptions options;
  for (const auto& assignment : assignments) {
    auto fail = [&](const std::string& why) {
      throw ProcessorError("grafx.processor.options", option + " \"" + assignment + "\": " + why);
    };
    size_t equals = assignment.find('=');
    if (equals == std::string::npos) fail("expected NAME=VALUE, e.g. knee=hard");
    const std::string name = assignment.substr(0, equals), text = assignment.substr(equals + 1);
    auto spec = std::find_if(descriptor.options.begin(), descriptor.options.end(),
                             [&](const OptionSpec& s) { return s.name == name; });
    if (spec == descriptor.options.end()) {
      std::vector<std::string> names;
      for (const auto& s : descriptor.options) names.push_back(s.name);
      fail(descriptor.name + " has no option \"" + name +
           "\"; its options: " + (names.empty() ? std::string("none") : join(names)));
    }
    switch (spec->kind) {
      case OptionSpec::Kind::kFlag:
        if (text != "true" && text != "false") fail("expected true or false");
        options[name] = text == "true";
        break;
      case OptionSpec::Kind::kNumber:
      case OptionSpec::Kind::kInteger: {
        char* end     = nullptr;
        double number = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0') fail("expected " + spec->accepted());
        options[name] = number;  // its range is checked when the processor is made
        break;
      }
      case OptionSpec::Kind::kChoice:
        options[name] = text;
        break;
      case OptionSpec::Kind::kNames:
        options[name] = split(text, ',');
        break;
    }
  }
  return options;
}

std::unique_ptr<Processor> make_configured(const ProcessorDescriptor& descriptor,
                                           ProcessorConfig config, const std::string& option) {
  try {
    return descriptor.make(config);
  } catch (const ProcessorError& e) {
    throw ProcessorError(e.code(), option + ": " + descriptor.name + ": " + e.message());
  }
}

namespace {

/// The breakpoints of "V@T,V@T,...": each V's values (':' between elements) mapped as a static
/// value of `named` would be.
Breakpoints parse_breakpoints(const NamedParameter& named, const std::string& text,
                              const std::string& processor, const std::string& where,
                              const std::function<void(const std::string&)>& fail) {
  if (named.spec->automation.empty())
    fail(processor + " cannot automate " + named.spec->physical_name + " (grafx processors " +
         processor + " lists what it can)");
  Breakpoints points;
  std::vector<at::Tensor> raw;
  std::string item_time;  // of the point before, as typed
  for (const std::string& item : split(text, ',')) {
    const size_t at_sign = item.find('@');
    if (at_sign == std::string::npos || item.find('@', at_sign + 1) != std::string::npos)
      fail("expected VALUE@SECONDS items separated by ',', e.g. gain_db=0@0,-20@2, but got \"" +
           item + "\"");
    std::optional<double> seconds = parse_finite(item.substr(at_sign + 1));
    if (!seconds || *seconds < 0)
      fail("\"" + item.substr(at_sign + 1) + "\" is not a time of 0 seconds or later");
    if (!points.seconds.empty() && *seconds <= points.seconds.back())
      fail("the times must rise from point to point, but " + item.substr(at_sign + 1) +
           " s follows " + item_time + " s");
    item_time          = item.substr(at_sign + 1);
    std::string values = item.substr(0, at_sign);
    if (values.empty()) fail("expected a value before @ in \"" + item + "\"");
    std::replace(values.begin(), values.end(), ':', ',');
    at::Tensor numbers = at::zeros(value_shape(named, 1), at::kDouble);
    fill_values(numbers, values, fail);
    raw.push_back(raw_values(named, numbers, 1, at::TensorOptions(at::kDouble), processor, where));
    points.seconds.push_back(*seconds);
  }
  points.raw = at::stack(raw);  // [K, 1, shape...]
  return points;
}

}  // namespace

TensorDict parameters_from_assignments(const Processor& processor,
                                       const std::vector<std::string>& assignments, at::Tensor* wet,
                                       const std::string& option,
                                       std::map<std::string, Breakpoints>* curves) {
  const std::vector<ParameterSpec> specs = node_parameter_specs(processor, wet != nullptr);
  TensorDict values;  // {name as typed: its numbers}; the library maps them
  bool wet_set = false;
  for (const auto& assignment : assignments) {
    const std::string where = option + " \"" + assignment + "\"";
    auto fail               = [&](const std::string& why) {
      throw ProcessorError("grafx.processor.parameters", where + ": " + why);
    };
    size_t equals = assignment.find('=');
    if (equals == std::string::npos) fail("expected NAME=VALUE, e.g. gain_db=-6,-6");
    const std::string name = assignment.substr(0, equals), text = assignment.substr(equals + 1);
    const NamedParameter named = find_parameter(specs, name, processor.name(), where);
    if (text.find('@') != std::string::npos) {
      if (!curves) fail("values at times (VALUE@SECONDS) are for grafx process --set only");
      (*curves)[named.spec->name] = parse_breakpoints(named, text, processor.name(), where, fail);
      continue;
    }
    at::Tensor numbers = at::zeros(value_shape(named, 1), at::kDouble);
    fill_values(numbers, text, fail);
    values[name] = numbers;
    wet_set      = wet_set || is_wet_amount(named.spec->name);
  }
  const TypeParameters raw = TypeParameters::from_named(
      raw_parameters(specs, processor.name(), values, 1, at::TensorOptions(at::kDouble), option));
  if (wet && wet_set) *wet = raw.wet;
  return raw.own;
}

}  // namespace grafx::cli
