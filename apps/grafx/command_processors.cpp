// grafx processors [NAME] [--response FILE]: the registered processors, their ports and
// parameters, and pictures of what they do.

#include "commands.h"

#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/io/processor_response.h>
#include <grafx/processors/registry.h>

#include <ATen/ATen.h>

#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace grafx::cli {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text;
  for (int64_t n : shape) text += (text.empty() ? "" : ", ") + std::to_string(n);
  return "[" + text + "]";
}

/// "−26.06 dB", or "0.05 … 2.3 ms" when the initial physical values differ.
std::string initial_value(const ParameterSpec& spec) {
  std::vector<int64_t> shape{1};
  shape.insert(shape.end(), spec.shape.begin(), spec.shape.end());
  at::Tensor raw      = at::full(shape, spec.init_mean, at::kDouble);
  at::Tensor physical = spec.to_physical ? spec.to_physical(raw) : raw;
  double lo = physical.min().item<double>(), hi = physical.max().item<double>();
  std::ostringstream s;
  s << std::setprecision(4) << lo;
  if (hi != lo) s << " … " << hi;
  return s.str() + (spec.unit.rfind(":", 0) == 0 ? "" : " ") + spec.unit;
}

void describe(const ProcessorInfo& info, bool detailed, double sample_rate) {
  auto processor = info.make({sample_rate});
  std::cout << std::left << std::setw(24) << info.name << info.summary << "\n"
            << "  ports: " << join(processor->inlets()) << " -> " << join(processor->outlets())
            << "\n";
  for (const auto& spec : processor->parameter_specs()) {
    std::cout << "  " << std::left << std::setw(20) << spec.name << std::setw(10)
              << shape_text(spec.shape) << spec.physical_name << " (" << spec.unit
              << "): " << spec.description << "\n";
    if (detailed)
      std::cout << "  " << std::setw(30) << ""
                << "initial: raw " << spec.init_mean << " ± " << spec.init_std << ", i.e. "
                << initial_value(spec) << "\n";
  }
}

/// Numbers of a comma-separated list; throws through `fail`.
std::vector<double> parse_numbers(const std::string& text,
                                  const std::function<void(const std::string&)>& fail) {
  std::vector<double> numbers;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    try {
      size_t used = 0;
      numbers.push_back(std::stod(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::logic_error&) {
      fail("\"" + item + "\" is not a number");
    }
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

/// Applies "--param NAME=VALUES" to raw parameters of one node. VALUES is one list of numbers
/// spread along the parameter's last dimension (one number fills it; several are interpolated
/// linearly), or one such list per row of the leading dimensions, separated by ';'.
void apply_parameter(TensorDict& parameters, const std::string& assignment,
                     const Processor& processor) {
  auto fail = [&](const std::string& why) {
    throw ProcessorError("grafx.processor.parameters", "--param \"" + assignment + "\": " + why);
  };
  size_t equals = assignment.find('=');
  if (equals == std::string::npos)
    fail("expected NAME=VALUES, e.g. log_gain=0.5 or log_magnitude=1,0,-1");
  std::string name = assignment.substr(0, equals);
  auto it          = parameters.find(name);
  if (it == parameters.end()) {
    std::vector<std::string> names;
    for (const auto& spec : processor.parameter_specs()) names.push_back(spec.name);
    fail(processor.name() + " has no parameter \"" + name + "\"; parameters: " + join(names));
  }
  at::Tensor& p  = it->second;  // 1×shape
  int64_t length = p.size(-1), n_rows = p.numel() / length;
  std::vector<std::string> rows;
  std::stringstream text(assignment.substr(equals + 1));
  for (std::string row; std::getline(text, row, ';');) rows.push_back(row);
  if (rows.size() != 1 && int64_t(rows.size()) != n_rows)
    fail("expected one list of values or " + std::to_string(n_rows) +
         " separated by ';', but got " + std::to_string(rows.size()));
  at::Tensor flat = p.view({n_rows, length});
  for (int64_t r = 0; r < n_rows; ++r)
    flat[r].copy_(spread(parse_numbers(rows[rows.size() == 1 ? 0 : r], fail), length));
}

}  // namespace

void add_processors_command(CLI::App& app) {
  struct Args {
    std::string name, response;
    std::vector<std::string> parameters;
    double sample_rate = ProcessorConfig().sample_rate;
    bool force         = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("processors", "List the processors, or show one and picture what it does");
  CLI::Option* name = cmd->add_option("name", args->name, "A processor (node type) name");
  CLI::Option* response =
      cmd->add_option("--response", args->response,
                      "Write a picture (.svg) of the processor's response: EQ magnitude response, "
                      "compressor/gate static curve, reverb energy decay, delay impulse response, "
                      "gain/imager stereo field")
          ->needs(name);
  cmd->add_option(
         "--param", args->parameters,
         "Raw parameter for the picture: NAME=VALUE, or NAME=V1,V2,... (interpolated along "
         "the last dimension), or one such list per row separated by ';'; default: the "
         "initial values")
      ->needs(response);
  cmd->add_option("--sample-rate", args->sample_rate, "Sample rate in Hz")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  add_force_flag(*cmd, args->force);
  cmd->callback([args] {
    if (args->name.empty()) {
      for (const auto& info : processor_registry()) describe(info, false, args->sample_rate);
      return;
    }
    auto processor = make_processor(args->name, {args->sample_rate});  // or an error naming them
    if (args->response.empty()) {
      for (const auto& info : processor_registry())
        if (info.name == args->name) describe(info, true, args->sample_rate);
      return;
    }
    if (std::filesystem::path(args->response).extension() != ".svg")
      throw IoError("grafx.io.plot",
                    "--response: expected an .svg file, but got \"" + args->response + "\"");
    check_writable(args->response, args->force);
    TensorDict parameters = default_parameters(*processor);
    for (const auto& assignment : args->parameters)
      apply_parameter(parameters, assignment, *processor);
    Plot plot = processor_response(*processor, parameters, args->sample_rate);
    write_plot(args->response, plot.series, plot.options, args->force);
    std::cout << "picture: " << args->response << " (" << plot.options.title << ")\n";
  });
}

}  // namespace grafx::cli
