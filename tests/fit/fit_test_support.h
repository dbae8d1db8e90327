#pragma once
// Helpers shared by the fitting tests.

#include <grafx/fit/fit.h>

namespace grafx::testing {

/// Settings for fits of test songs a few seconds long: 1 s crops, a 0.1 s warm-up, a fast
/// learning rate.
inline FitOptions small_options(int64_t steps) {
  FitOptions options;
  options.n_steps      = steps;
  options.crop_seconds = 1.0;
  options.skip_seconds = 0.1;
  options.optimizer.lr = 0.05;
  options.lr_schedule  = {};  // constant: tests compare fits of different lengths
  // Starts from the specs' values (the initialisation from the data has tests of its own).
  options.initialisation = InitialisationOptions::none();
  return options;
}

}  // namespace grafx::testing
