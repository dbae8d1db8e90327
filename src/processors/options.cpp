#include <grafx/error.h>
#include <grafx/processors/options.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace grafx {
namespace {

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

OptionSpec spec(std::string name, OptionSpec::Kind kind, OptionValue default_value,
                std::string description) {
  OptionSpec s;
  s.name          = std::move(name);
  s.kind          = kind;
  s.default_value = std::move(default_value);
  s.description   = std::move(description);
  return s;
}

}  // namespace

OptionSpec OptionSpec::flag(std::string name, bool default_value, std::string description) {
  return spec(std::move(name), Kind::kFlag, default_value, std::move(description));
}

OptionSpec OptionSpec::number(std::string name, double default_value, double min, double max,
                              std::string description) {
  OptionSpec s = spec(std::move(name), Kind::kNumber, default_value, std::move(description));
  s.min        = min;
  s.max        = max;
  return s;
}

OptionSpec OptionSpec::integer(std::string name, int64_t default_value, int64_t min, int64_t max,
                               std::string description) {
  OptionSpec s = number(std::move(name), double(default_value), double(min), double(max),
                        std::move(description));
  s.kind       = Kind::kInteger;
  return s;
}

OptionSpec OptionSpec::choice(std::string name, std::string default_value,
                              std::vector<std::string> choices, std::string description) {
  OptionSpec s =
      spec(std::move(name), Kind::kChoice, std::move(default_value), std::move(description));
  s.choices = std::move(choices);
  return s;
}

OptionSpec OptionSpec::names(std::string name, std::vector<std::string> default_value,
                             std::string description) {
  return spec(std::move(name), Kind::kNames, std::move(default_value), std::move(description));
}

std::string OptionSpec::accepted() const {
  switch (kind) {
    case Kind::kFlag:
      return "true or false";
    case Kind::kNumber:
      return "a number in [" + number_text(min) + ", " + number_text(max) + "]";
    case Kind::kInteger:
      return "an integer in [" + number_text(min) + ", " + number_text(max) + "]";
    case Kind::kChoice: {
      std::string text = "one of ";
      for (size_t i = 0; i < choices.size(); ++i) text += (i ? ", " : "") + choices[i];
      return text;
    }
    case Kind::kNames:
      return "a list of node type names";
  }
  return "";
}

ProcessorOptions resolve_options(const std::vector<OptionSpec>& specs,
                                 const ProcessorOptions& given) {
  ProcessorOptions resolved;
  for (const auto& s : specs) resolved[s.name] = s.default_value;
  for (const auto& [name, value] : given) {
    auto it = std::find_if(specs.begin(), specs.end(),
                           [&](const OptionSpec& s) { return s.name == name; });
    if (it == specs.end()) {
      std::string known;
      for (const auto& s : specs) known += (known.empty() ? "" : ", ") + s.name;
      throw ProcessorError("grafx.processor.options",
                           "unknown option \"" + name +
                               "\"; options: " + (known.empty() ? std::string("none") : known));
    }
    const OptionSpec& s = *it;
    auto fail           = [&] {
      throw ProcessorError(
                    "grafx.processor.options",
                    "option \"" + name + "\": expected " + s.accepted() + ", but got " + to_json_text(value));
    };
    switch (s.kind) {
      case OptionSpec::Kind::kFlag:
        if (!std::holds_alternative<bool>(value)) fail();
        break;
      case OptionSpec::Kind::kNumber:
      case OptionSpec::Kind::kInteger: {
        const double* number = std::get_if<double>(&value);
        if (!number || !std::isfinite(*number) || *number < s.min || *number > s.max) fail();
        if (s.kind == OptionSpec::Kind::kInteger && *number != std::floor(*number)) fail();
        break;
      }
      case OptionSpec::Kind::kChoice: {
        const std::string* choice = std::get_if<std::string>(&value);
        if (!choice || std::find(s.choices.begin(), s.choices.end(), *choice) == s.choices.end())
          fail();
        break;
      }
      case OptionSpec::Kind::kNames:
        if (!std::holds_alternative<std::vector<std::string>>(value)) fail();
        break;
    }
    resolved[name] = value;
  }
  return resolved;
}

bool option_flag(const ProcessorOptions& options, const std::string& name) {
  return std::get<bool>(options.at(name));
}

double option_number(const ProcessorOptions& options, const std::string& name) {
  return std::get<double>(options.at(name));
}

const std::string& option_choice(const ProcessorOptions& options, const std::string& name) {
  return std::get<std::string>(options.at(name));
}

const std::vector<std::string>& option_names(const ProcessorOptions& options,
                                             const std::string& name) {
  return std::get<std::vector<std::string>>(options.at(name));
}

}  // namespace grafx
