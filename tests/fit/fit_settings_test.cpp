// The fit's settings table: defaults inside their ranges, one JSON form that round-trips, one
// validation that names the setting, names and aliases unique, and every setting reaching the
// FitOptions field it describes.

#include <grafx/fit/fit_settings.h>

#include "support/test_support.h"

#include <cmath>
#include <limits>
#include <set>

namespace grafx {
namespace {

/// A value of `s` inside its range and different from `value` (the default).
nlohmann::json another_value(const FitSetting& s, const nlohmann::json& value) {
  switch (s.kind) {
    case FitSettingKind::kFlag:
      return !value.get<bool>();
    case FitSettingKind::kChoice:
      return s.choices.at(s.choices.at(0) == value.get<std::string>() ? 1 : 0);
    case FitSettingKind::kInteger:
      return value.get<int64_t>() + 3;
    case FitSettingKind::kNumber: {
      const double x = value.get<double>();
      double y       = x == 0 ? 0.5 : x * 0.75;  // inside (0, max] for the bounded ones
      if (s.maximum_open && y >= s.maximum) y = s.maximum / 2;
      return y;
    }
  }
  return value;
}

TEST(FitSettings, DefaultsLieInTheirRangesAndNamesAreUnique) {
  EXPECT_NO_THROW(check_fit_settings(FitOptions{}));
  std::set<std::string> names;
  for (const FitSetting& s : fit_settings()) {
    EXPECT_TRUE(names.insert(command_line_name(s)).second) << s.name;
    for (const auto& alias : s.aliases) EXPECT_TRUE(names.insert(alias).second) << alias;
    EXPECT_FALSE(s.help.empty()) << s.name;
    EXPECT_FALSE(s.group.empty()) << s.name;
    EXPECT_EQ(fit_setting_problem(s, s.get(FitOptions{})), "") << s.name;
  }
  EXPECT_EQ(command_line_name(fit_setting("crop_seconds")), "--crop-seconds");
  EXPECT_GE(fit_settings().size(), 20u);
}

TEST(FitSettings, EverySettingRoundTripsThroughJsonAndReachesItsField) {
  FitOptions changed;
  for (const FitSetting& s : fit_settings()) {
    const nlohmann::json before = s.get(changed), value = another_value(s, before);
    set_fit_setting(changed, s.name, value);
    EXPECT_EQ(s.get(changed), value) << s.name;
    EXPECT_NE(s.get(changed), before) << s.name;
  }
  // The fields themselves, read independently of the table.
  EXPECT_NE(changed.crop_seconds, FitOptions{}.crop_seconds);
  EXPECT_NE(changed.lr_schedule.final_ratio, FitOptions{}.lr_schedule.final_ratio);
  EXPECT_NE(changed.optimizer.lr, FitOptions{}.optimizer.lr);
  EXPECT_NE(changed.optimizer.beta1, FitOptions{}.optimizer.beta1);
  EXPECT_NE(changed.optimizer.beta2, FitOptions{}.optimizer.beta2);
  EXPECT_NE(changed.automation.rate_hz, FitOptions{}.automation.rate_hz);
  EXPECT_NE(changed.initialisation.spectral_eq, FitOptions{}.initialisation.spectral_eq);
  EXPECT_TRUE(changed.hessian_preconditioning);
  EXPECT_NE(changed.regularizer_weights.at("eq_curvature"),
            FitOptions{}.regularizer_weights.at("eq_curvature"));
  const nlohmann::json json = fit_settings_json(changed);
  EXPECT_EQ(json.size(), fit_settings().size());
  FitOptions back = fit_options_from_json(nlohmann::json::parse(json.dump()));
  EXPECT_EQ(fit_settings_json(back), json);
  // Settings left out keep the base's values.
  FitOptions partial = fit_options_from_json({{"seed", 7}}, changed);
  EXPECT_EQ(partial.seed, 7u);
  EXPECT_EQ(partial.crop_seconds, changed.crop_seconds);
}

TEST(FitSettings, BadValuesAreRefusedNamingTheSetting) {
  FitOptions o;
  EXPECT_GRAFX_ERROR(set_fit_setting(o, "crop_seconds", -1.0), "grafx.fit.options",
                     "crop_seconds: expected a finite crop length above 0 s, but got -1");
  EXPECT_GRAFX_ERROR(set_fit_setting(o, "crop_seconds", std::nan("")), "grafx.fit.options",
                     "but got nan");
  EXPECT_GRAFX_ERROR(set_fit_setting(o, "crop_seconds", "long"), "grafx.fit.options",
                     "but got \"long\"");
  EXPECT_GRAFX_ERROR(set_fit_setting(o, "lr", 11.0), "grafx.fit.options",
                     "lr: expected a finite learning rate above 0 and at most 10, but got 11");
  EXPECT_GRAFX_ERROR(set_fit_setting(o, "num_steps", 2.5), "grafx.fit.options",
                     "num_steps: expected a whole number of steps of at least 0");
  EXPECT_GRAFX_ERROR(set_fit_setting(o, "seed", -1), "grafx.fit.options", "seed:");
  EXPECT_GRAFX_ERROR(set_fit_setting(o, "automation_start", 1.0), "grafx.fit.options",
                     "of at least 0 and below 1, but got 1");
  EXPECT_GRAFX_ERROR(set_fit_setting(o, "adam_beta2", 1.0), "grafx.fit.options",
                     "adam_beta2: expected a finite second-moment decay of at least 0 and below "
                     "1, but got 1");
  EXPECT_GRAFX_ERROR(set_fit_setting(o, "optimizer", "sgd"), "grafx.fit.options",
                     "expected one of adamw, adahessian, but got \"sgd\"");
  EXPECT_GRAFX_ERROR(set_fit_setting(o, "adapt_threads", 1), "grafx.fit.options",
                     "expected true or false");
  EXPECT_GRAFX_ERROR(set_fit_setting(o, "crop", 1.0), "grafx.fit.options",
                     "unknown fit setting \"crop\"; settings: num_steps,");
  EXPECT_GRAFX_ERROR(fit_options_from_json({{"crop_seconds", 0}}), "grafx.fit.options",
                     "crop_seconds");
  EXPECT_GRAFX_ERROR(fit_options_from_json(nlohmann::json::array()), "grafx.fit.options",
                     "as an object");
  EXPECT_EQ(fit_settings_json(o), fit_settings_json(FitOptions{})) << "refusals change nothing";
  // Huge but finite values where no maximum is set stay valid (a crop longer than any song is
  // the whole song).
  FitOptions huge;
  EXPECT_NO_THROW(set_fit_setting(huge, "crop_seconds", 1e308));
  EXPECT_EQ(fit_setting("crop_seconds").maximum, std::numeric_limits<double>::infinity());
  // Fields set directly are checked by the same table.
  o.skip_seconds = -2;
  EXPECT_GRAFX_ERROR(check_fit_settings(o), "grafx.fit.options",
                     "skip_seconds: expected a finite warm-up of at least 0 s, but got -2");
}

}  // namespace
}  // namespace grafx
