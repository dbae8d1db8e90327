#pragma once
// Unit conversions and checks shared by processors (private to the library).

#include <grafx/error.h>
#include <grafx/processors/processor.h>

#include <ATen/ATen.h>

#include <cmath>
#include <string>

namespace grafx::units {

/// Natural-log gain to decibels: 20·log10(e^g) = g·20/ln 10.
inline at::Tensor log_gain_to_db(const at::Tensor& log_gain) {
  return log_gain * (20.0 / std::log(10.0));
}

/// Decibels to natural-log gain, the inverse of log_gain_to_db.
inline at::Tensor db_to_log_gain(const at::Tensor& db) { return db * (std::log(10.0) / 20.0); }

/// A duration in samples at the configured sample rate; throws ProcessorError
/// [grafx.processor.config] unless the sample rate is positive and the duration has at least
/// `minimum` samples.
inline int64_t samples(double seconds, const ProcessorConfig& config, const std::string& processor,
                       const std::string& what, int64_t minimum) {
  SampleRate rate = config.sample_rate;
  int64_t n       = rate > 0 ? int64_t(std::llround(seconds * double(rate))) : 0;
  if (n < minimum)
    throw ProcessorError("grafx.processor.config",
                         processor + ": expected a sample rate giving a " + what + " of at least " +
                             std::to_string(minimum) + " samples, but got " + std::to_string(rate) +
                             " Hz");
  return n;
}

/// Throws ProcessorError unless x is N×2×L.
inline void check_stereo(const at::Tensor& x, const std::string& processor) {
  if (x.size(1) != 2)
    throw ProcessorError("grafx.processor.inputs",
                         processor + ": expected a stereo (N×2×L) input, but got " +
                             std::to_string(x.size(1)) + " channel(s)");
}

}  // namespace grafx::units
