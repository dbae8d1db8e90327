#include <grafx/error.h>
#include <grafx/fit/fit_settings.h>
#include <grafx/schedule/schedule.h>
#include <grafx/text.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

namespace grafx {
namespace {

constexpr double kUnbounded = std::numeric_limits<double>::infinity();

/// A setting whose value is the field `ref(options)` of type T.
template <typename T, typename Ref>
FitSetting field(FitSetting s, Ref ref) {
  s.get = [ref](const FitOptions& o) { return nlohmann::json(ref(const_cast<FitOptions&>(o))); };
  s.set = [ref](FitOptions& o, const nlohmann::json& value) { ref(o) = value.get<T>(); };
  return s;
}

FitSetting number(std::string name, std::string group, std::string what, std::string unit,
                  double minimum, bool minimum_open, double maximum, bool maximum_open,
                  std::string help, std::vector<std::string> aliases = {}) {
  FitSetting s;
  s.name = std::move(name), s.kind = FitSettingKind::kNumber, s.group = std::move(group);
  s.what = std::move(what), s.unit = std::move(unit), s.help = std::move(help);
  s.minimum = minimum, s.minimum_open = minimum_open;
  s.maximum = maximum, s.maximum_open = maximum_open;
  s.aliases = std::move(aliases);
  return s;
}

FitSetting integer(std::string name, std::string group, std::string what, double minimum,
                   std::string help, std::vector<std::string> aliases = {}) {
  FitSetting s = number(std::move(name), std::move(group), std::move(what), "", minimum, false,
                        kUnbounded, false, std::move(help), std::move(aliases));
  s.kind       = FitSettingKind::kInteger;
  return s;
}

FitSetting flag(std::string name, std::string group, std::string help) {
  FitSetting s;
  s.name = std::move(name), s.kind = FitSettingKind::kFlag, s.group = std::move(group);
  s.help = std::move(help), s.what = s.name;
  return s;
}

std::vector<FitSetting> make_settings() {
  using O = FitOptions;
  std::vector<FitSetting> s;
  // ---- length
  s.push_back(field<int64_t>(
      integer("num_steps", "length", "number of steps", 0,
              "Optimisation steps (with a time budget alone: no limit)", {"--steps"}),
      [](O& o) -> int64_t& { return o.n_steps; }));
  s.push_back(field<double>(
      number("time_budget_seconds", "length", "time budget", "s", 0, false, 6e10, false,
             "Stop after this many seconds of fitting, also with steps left (0: no limit)"),
      [](O& o) -> double& { return o.time_budget_seconds; }));
  // ---- optimizer
  s.push_back(field<double>(
      number("lr", "optimizer", "learning rate", "", 0, true, 10, false,
             "AdamW's learning rate (above 10 the first step throws every parameter out of "
             "range)"),
      [](O& o) -> double& { return o.optimizer.lr; }));
  s.back().same_on_resume = true;
  s.push_back(field<double>(number("weight_decay", "optimizer", "weight decay", "", 0, false,
                                   kUnbounded, false, "AdamW's decoupled weight decay"),
                            [](O& o) -> double& { return o.optimizer.weight_decay; }));
  s.back().same_on_resume = true;
  s.push_back(
      field<double>(number("adam_beta1", "optimizer", "first-moment decay", "", 0, false, 1, true,
                           "AdamW's decay of its running mean of the gradients per step"),
                    [](O& o) -> double& { return o.optimizer.beta1; }));
  s.back().same_on_resume = true;
  s.push_back(field<double>(
      number("adam_beta2", "optimizer", "second-moment decay", "", 0, false, 1, true,
             "AdamW's decay of its running mean of the squared gradients per step (0.999 "
             "averages about 1,000 steps)"),
      [](O& o) -> double& { return o.optimizer.beta2; }));
  s.back().same_on_resume = true;
  {
    FitSetting optimizer;
    optimizer.name    = "optimizer";
    optimizer.kind    = FitSettingKind::kChoice;
    optimizer.group   = "optimizer";
    optimizer.what    = "optimizer";
    optimizer.choices = {"adamw", "adahessian"};
    optimizer.help =
        "adamw, or adahessian: Adam's second moment from the Hessian's diagonal where it exceeds "
        "the gradient, one Hessian-vector product per step";
    optimizer.get = [](const O& o) {
      return nlohmann::json(o.hessian_preconditioning ? "adahessian" : "adamw");
    };
    optimizer.set = [](O& o, const nlohmann::json& v) {
      o.hessian_preconditioning = v.get<std::string>() == "adahessian";
    };
    optimizer.same_on_resume = true;
    s.push_back(optimizer);
  }
  s.push_back(field<int64_t>(
      integer("reset_optimizer_every", "optimizer", "optimizer reset interval", 0,
              "Reset the optimizer's state every this many steps (0: never)", {"--reset-every"}),
      [](O& o) -> int64_t& { return o.reset_optimizer_every; }));
  s.back().same_on_resume = true;
  s.push_back(field<double>(
      number("max_gradient_norm", "optimizer", "gradient-norm limit", "", 0, false, kUnbounded,
             false, "Clip the global gradient norm to this (0: off)", {"--clip"}),
      [](O& o) -> double& { return o.max_gradient_norm; }));
  s.back().same_on_resume = true;
  s.push_back(field<int64_t>(integer("max_non_finite_steps", "optimizer", "number of skipped steps",
                                     0, "Stop after this many skipped (non-finite) steps in a row"),
                             [](O& o) -> int64_t& { return o.max_non_finite_steps; }));
  // ---- loss
  {
    FitSetting curvature =
        number("eq_curvature", "loss", "EQ curvature weight", "", 0, false, 1000, false,
               "Weight of the parametric EQs' curvature regulariser (mean square second "
               "difference of each curve in dB); 0: curves as jagged as the crops ask");
    curvature.get = [](const O& o) {
      auto weight = o.regularizer_weights.find("eq_curvature");
      return nlohmann::json(weight == o.regularizer_weights.end() ? 0.0 : weight->second);
    };
    curvature.set = [](O& o, const nlohmann::json& v) {
      o.regularizer_weights["eq_curvature"] = v.get<double>();
    };
    curvature.same_on_resume = true;
    s.push_back(curvature);
  }
  // ---- schedule
  s.push_back(field<int64_t>(integer("warmup_steps", "schedule", "number of warm-up steps", 0,
                                     "Steps of linear learning-rate warm-up from lr/10"),
                             [](O& o) -> int64_t& { return o.lr_schedule.warmup_steps; }));
  s.back().same_on_resume = true;
  s.push_back(field<double>(
      number("final_lr_ratio", "schedule", "final learning-rate ratio", "", 0, true, 1, false,
             "Cosine decay of the learning rate to this share of lr by the last step (or the end "
             "of the time budget); 1: constant",
             {"--final-lr"}),
      [](O& o) -> double& { return o.lr_schedule.final_ratio; }));
  s.back().same_on_resume = true;
  // ---- crops
  s.push_back(
      field<double>(number("crop_seconds", "crops", "crop length", "s", 0, true, kUnbounded, false,
                           "Seconds of audio per step (the whole song if shorter)", {"--crop"}),
                    [](O& o) -> double& { return o.crop_seconds; }));
  s.push_back(field<int64_t>(
      integer("crops_per_step", "crops", "number of crops per step", 1,
              "Crops per step, rendered as one batch (the loss is their mean)", {"--crops"}),
      [](O& o) -> int64_t& { return o.crops_per_step; }));
  s.back().same_on_resume = true;
  s.push_back(
      field<double>(number("skip_seconds", "crops", "warm-up", "s", 0, false, kUnbounded, false,
                           "Seconds at the start of each crop left out of the loss", {"--warm-up"}),
                    [](O& o) -> double& { return o.skip_seconds; }));
  s.push_back(field<uint64_t>(
      integer("seed", "crops", "number", 0, "Seed of the initial parameters and the crops"),
      [](O& o) -> uint64_t& { return o.seed; }));
  s.back().same_on_resume = true;
  // ---- start
  s.push_back(field<bool>(flag("initialise_starts", "start",
                               "Start from the processors' typical settings (--init starts)"),
                          [](O& o) -> bool& { return o.initialisation.typical_starts; }));
  s.push_back(
      field<bool>(flag("initialise_gains", "start",
                       "Start from least-squares gains per track and channel (--init gains)"),
                  [](O& o) -> bool& { return o.initialisation.channel_gains; }));
  s.push_back(field<bool>(flag("initialise_eq", "start",
                               "Start each track's EQ from smoothed spectral ratios (--init eq)"),
                          [](O& o) -> bool& { return o.initialisation.spectral_eq; }));
  // ---- automation
  s.push_back(
      field<double>(number("automation_rate", "automation", "automation rate", "Hz", 0, true,
                           kUnbounded, false, "Points per second of song of the automated curves"),
                    [](O& o) -> double& { return o.automation.rate_hz; }));
  s.back().same_on_resume = true;
  s.push_back(field<double>(
      number("automation_start", "automation",
             "automation start (share of the fit fitted statically)", "", 0, false, 1, true,
             "Share of the fit (steps, or time with a budget) fitted statically before the "
             "curves start from its values"),
      [](O& o) -> double& { return o.automation.start; }));
  s.back().same_on_resume = true;
  s.push_back(field<double>(
      number("automation_smoothness", "automation", "automation smoothness weight", "", 0, false,
             1000, false,  // far above the best (0.3); beyond, the prior overflows the loss
             "Weight of the curves' smoothness prior (mean |second difference| of their raw "
             "points)"),
      [](O& o) -> double& { return o.automation.smoothness; }));
  s.back().same_on_resume = true;
  // ---- engine
  s.push_back(field<bool>(flag("adapt_threads", "engine",
                               "Time the steps and use fewer threads when that steps faster"),
                          [](O& o) -> bool& { return o.adapt_threads; }));
  {
    FitSetting method;
    method.name    = "schedule_method";
    method.kind    = FitSettingKind::kChoice;
    method.group   = "engine";
    method.what    = "schedule method";
    method.choices = {"optimal", "beam", "greedy", "one-by-one", "fixed"};
    method.help    = "How the renderer orders its batched steps (grafx schedule)";
    method.get     = [](const O& o) { return nlohmann::json(to_string(o.schedule.method)); };
    method.set     = [](O& o, const nlohmann::json& v) {
      o.schedule = parse_schedule_method(v.get<std::string>());
    };
    s.push_back(method);
  }
  return s;
}

std::string text_of(const nlohmann::json& value) {
  if (!value.is_number_float()) return value.dump();
  return significant_digits(value.get<double>(), 10);
}

std::string bound_text(double value) { return significant_digits(value, 10); }

/// " above 0 s and at most 10 s".
std::string range_text(const FitSetting& s) {
  const std::string unit = s.unit.empty() ? "" : " " + s.unit;
  std::string text;
  if (s.minimum > -kUnbounded)
    text += (s.minimum_open ? " above " : " of at least ") + bound_text(s.minimum) + unit;
  if (s.maximum < kUnbounded)
    text += std::string(text.empty() ? "" : " and") + (s.maximum_open ? " below " : " at most ") +
            bound_text(s.maximum) + unit;
  return text;
}

}  // namespace

const std::vector<FitSetting>& fit_settings() {
  static const std::vector<FitSetting> settings = make_settings();
  return settings;
}

const FitSetting& fit_setting(const std::string& name) {
  for (const auto& s : fit_settings())
    if (s.name == name) return s;
  std::string known;
  for (const auto& s : fit_settings()) known += (known.empty() ? "" : ", ") + s.name;
  throw FitError("grafx.fit.options", "unknown fit setting \"" + name + "\"; settings: " + known);
}

std::string command_line_name(const FitSetting& setting) {
  std::string name = "--" + setting.name;
  for (char& c : name)
    if (c == '_') c = '-';
  return name;
}

std::string fit_setting_problem(const FitSetting& s, const nlohmann::json& value) {
  std::string expected;
  bool ok = false;
  switch (s.kind) {
    case FitSettingKind::kFlag:
      expected = "true or false";
      ok       = value.is_boolean();
      break;
    case FitSettingKind::kChoice: {
      expected = "one of";
      for (const auto& c : s.choices) expected += (c == s.choices.front() ? " " : ", ") + c;
      ok = value.is_string() && std::find(s.choices.begin(), s.choices.end(),
                                          value.get<std::string>()) != s.choices.end();
      break;
    }
    case FitSettingKind::kInteger:
    case FitSettingKind::kNumber: {
      const bool whole = s.kind == FitSettingKind::kInteger;
      expected         = (whole ? "a whole " : "a finite ") + s.what + range_text(s);
      if (whole ? !value.is_number_integer() : !value.is_number()) break;
      const double x = value.get<double>();
      ok             = std::isfinite(x) && (s.minimum_open ? x > s.minimum : x >= s.minimum) &&
           (s.maximum_open ? x < s.maximum : x <= s.maximum);
      break;
    }
  }
  return ok ? "" : "expected " + expected + ", but got " + text_of(value);
}

void set_fit_setting(FitOptions& options, const std::string& name, const nlohmann::json& value) {
  const FitSetting& s = fit_setting(name);
  std::string problem = fit_setting_problem(s, value);
  if (!problem.empty()) throw FitError("grafx.fit.options", name + ": " + problem);
  s.set(options, value);
}

nlohmann::json fit_settings_json(const FitOptions& options) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& s : fit_settings()) j[s.name] = s.get(options);
  return j;
}

FitOptions fit_options_from_json(const nlohmann::json& settings, FitOptions base) {
  if (!settings.is_object())
    throw FitError(
        "grafx.fit.options",
        "expected the fit settings as an object {name: value}, but got " + settings.dump());
  for (const auto& [name, value] : settings.items()) set_fit_setting(base, name, value);
  return base;
}

std::string resume_difference(const nlohmann::json& recorded, const FitOptions& options) {
  const bool automated = !options.automation.parameters.empty();
  for (const auto& s : fit_settings()) {
    if (!s.same_on_resume || !recorded.contains(s.name)) continue;
    if (s.group == "automation" && !automated) continue;  // curves' settings, without curves
    const std::string before = text_of(recorded[s.name]), now = text_of(s.get(options));
    if (before != now)
      return "made with " + s.name + " " + before + ", but this fit uses " + now +
             " (resume with the settings the fit was started with)";
  }
  return "";
}

void check_fit_settings(const FitOptions& options) {
  for (const auto& s : fit_settings()) {
    std::string problem = fit_setting_problem(s, s.get(options));
    if (!problem.empty()) throw FitError("grafx.fit.options", s.name + ": " + problem);
  }
}

}  // namespace grafx
