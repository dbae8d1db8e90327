#pragma once
// Unit conversions and checks shared by processors (private to the library).

#include <grafx/error.h>

#include <ATen/ATen.h>

#include <cmath>
#include <string>

namespace grafx::units {

/// Natural-log gain to decibels: 20·log10(e^g) = g·20/ln 10.
inline at::Tensor log_gain_to_db(const at::Tensor& log_gain) { return log_gain * (20.0 / std::log(10.0)); }

/// Throws ProcessorError unless x is N×2×L.
inline void check_stereo(const at::Tensor& x, const std::string& processor) {
  if (x.size(1) != 2)
    throw ProcessorError("grafx.processor.inputs",
                         processor + ": expected a stereo (N×2×L) input, but got " +
                             std::to_string(x.size(1)) + " channel(s)");
}

}  // namespace grafx::units
