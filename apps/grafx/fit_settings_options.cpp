// The fit's settings as command-line options, generated from the library's table
// (grafx/fit/fit_settings.h): --name-with-dashes of each setting's name, its older names as
// aliases, its help, default, group and range.

#include <grafx/fit/fit_settings.h>

#include "arguments.h"

#include <cstdint>
#include <optional>
#include <string>

namespace grafx::cli {
namespace {

/// A setting's value from its command-line text, or none when the text is not of its kind.
std::optional<nlohmann::json> setting_value(const FitSetting& s, const std::string& text) {
  switch (s.kind) {
    case FitSettingKind::kFlag:
      if (text == "true" || text == "on" || text == "1") return nlohmann::json(true);
      if (text == "false" || text == "off" || text == "0") return nlohmann::json(false);
      return std::nullopt;
    case FitSettingKind::kChoice:
      return nlohmann::json(text);
    case FitSettingKind::kInteger: {
      size_t used = 0;
      try {
        if (!text.empty() && text[0] != '-') {  // up to 2^64 − 1 (seeds)
          unsigned long long value = std::stoull(text, &used);
          if (used == text.size()) return nlohmann::json(uint64_t(value));
        } else {
          long long value = std::stoll(text, &used);
          if (used == text.size()) return nlohmann::json(int64_t(value));
        }
      } catch (const std::logic_error&) {
      }
      return std::nullopt;
    }
    case FitSettingKind::kNumber:
      if (std::optional<double> value = parse_finite(text)) return nlohmann::json(*value);
      return std::nullopt;
  }
  return std::nullopt;
}

/// INT, FLOAT, true|false or {a,b}: what --help shows before the default.
std::string type_name(const FitSetting& s) {
  switch (s.kind) {
    case FitSettingKind::kInteger:
      return "INT";
    case FitSettingKind::kNumber:
      return "FLOAT";
    case FitSettingKind::kFlag:
      return "true|false";
    case FitSettingKind::kChoice: {
      std::string names;
      for (const auto& c : s.choices) names += (names.empty() ? "" : ",") + c;
      return "{" + names + "}";
    }
  }
  return "";
}

std::string default_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

}  // namespace

std::map<std::string, CLI::Option*> add_fit_settings(CLI::App& cmd, FitOptions& options) {
  std::map<std::string, CLI::Option*> added;
  for (const FitSetting& s : fit_settings()) {
    std::string names = command_line_name(s);
    for (const auto& alias : s.aliases) names += "," + alias;
    const std::string name = s.name;
    CLI::Option* option    = cmd.add_option_function<std::string>(
        names,
        [&options, name](const std::string& text) {
          set_fit_setting(options, name, *setting_value(fit_setting(name), text));
        },
        s.help);
    option->default_str(default_text(s.get(options)))
        ->group("Fit settings (" + s.group + ")")
        ->check(CLI::Validator(
            [name](std::string& text) -> std::string {
              const FitSetting& setting           = fit_setting(name);
              std::optional<nlohmann::json> value = setting_value(setting, text);
              std::string problem =
                  value ? fit_setting_problem(setting, *value) : fit_setting_problem(setting, text);
              // Quote what was typed, as the other options do.
              size_t got = problem.rfind(", but got ");
              return problem.empty() ? "" : problem.substr(0, got) + ", but got \"" + text + "\"";
            },
            ""));
    option->type_name(type_name(s));
    added[s.name] = option;
  }
  return added;
}

}  // namespace grafx::cli
