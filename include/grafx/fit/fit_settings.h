#pragma once
/// The fit's settings, described once: each scalar field of FitOptions with one name (the
/// Python keyword, the JSON key, and `--name-with-dashes` on the command line), its kind,
/// default, range, unit, group and help, older names kept as aliases. The command line's flags,
/// Python's FitOptions properties and `grafx.fit_settings()`, fit.json and the validation of a
/// FitOptions are all generated from this table, so a new setting is one entry here.
///
///   FitOptions options;
///   set_fit_setting(options, "crop_seconds", 2.5);        // checked: FitError when out of range
///   nlohmann::json all = fit_settings_json(options);      // {"crop_seconds": 2.5, ...}
///   for (const FitSetting& s : fit_settings()) std::cout << command_line_name(s) << "\n";
///
/// Settings that are not one value (learning rates per group, stages, the automated types, the
/// regulariser weights, the loss, gradient hooks) stay fields of FitOptions with their own
/// options and keywords.

#include <grafx/fit/fit.h>

#include <nlohmann/json.hpp>

#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace grafx {

enum class FitSettingKind {
  kInteger,  ///< a whole number (JSON integer)
  kNumber,   ///< a finite number (JSON number)
  kFlag,     ///< true or false
  kChoice,   ///< one word of `choices`
};

struct FitSetting {
  std::string name;  ///< "crop_seconds": Python keyword, JSON key, CLI --crop-seconds
  FitSettingKind kind = FitSettingKind::kNumber;
  std::string group;  ///< "length", "optimizer", "schedule", "crops", "start", "automation", ...
  std::string help;   ///< one sentence for --help and docstrings
  std::string what;   ///< what the value is, in errors: "a finite <what> above 0 s"
  std::string unit;   ///< "s", "Hz", or empty
  /// The range of numbers and integers: [minimum, maximum], ends open where the flags say; an
  /// infinite end bounds nothing (values must be finite anyway).
  double minimum    = -std::numeric_limits<double>::infinity();
  double maximum    = std::numeric_limits<double>::infinity();
  bool minimum_open = false, maximum_open = false;
  std::vector<std::string> choices;  ///< kChoice
  /// Older command-line names kept working, e.g. "--crop" for crop_seconds.
  std::vector<std::string> aliases;
  /// A setting that changes the steps: a resumed fit must use the value its checkpoint records.
  bool same_on_resume = false;
  std::function<nlohmann::json(const FitOptions&)> get;
  std::function<void(FitOptions&, const nlohmann::json&)> set;  ///< a value already checked
};

/// Every setting, grouped, in the order listings show them.
const std::vector<FitSetting>& fit_settings();

/// The setting called `name`. Throws FitError [grafx.fit.options] for another name, listing them.
const FitSetting& fit_setting(const std::string& name);

/// "--crop-seconds" for crop_seconds.
std::string command_line_name(const FitSetting& setting);

/// Why `value` is not a value of `setting` ("expected a finite crop length above 0 s, but got
/// -1"), or empty when it is one.
std::string fit_setting_problem(const FitSetting& setting, const nlohmann::json& value);

/// Sets one setting. Throws FitError [grafx.fit.options] "NAME: expected ..., but got ..." for
/// an unknown name or a value of the wrong kind or out of range.
void set_fit_setting(FitOptions& options, const std::string& name, const nlohmann::json& value);

/// Every setting's value, {name: value}.
nlohmann::json fit_settings_json(const FitOptions& options);

/// `base` with the settings of `settings` ({name: value}; others keep base's values). Throws
/// FitError [grafx.fit.options] for an unknown name or a bad value, naming it.
FitOptions fit_options_from_json(const nlohmann::json& settings, FitOptions base = {});

/// Why a fit with `options` may not resume a checkpoint whose settings are `recorded` ({name:
/// value}): "made with lr 0.05, but this fit uses 0.01 (...)" for the first setting that changes
/// the steps and differs (numbers to 10 digits, as checkpoints of version 2 wrote them; those
/// absent from `recorded` and, without automated parameters, the automation's are not
/// compared), or empty.
std::string resume_difference(const nlohmann::json& recorded, const FitOptions& options);

/// Throws FitError [grafx.fit.options] for the first setting of `options` out of its range (for
/// options whose fields were set directly in C++).
void check_fit_settings(const FitOptions& options);

}  // namespace grafx
