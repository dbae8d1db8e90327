#pragma once
/// Per-sample helpers of streams: values that glide to their targets, and delay lines (both
/// allocation-free while they run).

#include <algorithm>
#include <cstdint>
#include <vector>

namespace grafx {

using SampleRate = int64_t;  // as grafx/tensors.h

/// How long a change of a control takes to reach its new value: a linear glide, so that no
/// change clicks (each sample moves by at most 1/glide_samples of the change).
inline constexpr double kGlideSeconds = 0.02;
/// kGlideSeconds in samples.
inline int64_t glide_samples(SampleRate sample_rate) {
  return int64_t(kGlideSeconds * double(sample_rate));
}

/// A value that glides linearly to its targets (per sample, allocation-free).
class Glide {
 public:
  explicit Glide(float value = 0) : value_(value), target_(value) {}
  void to(float target, int64_t samples) {
    target_ = target, left_ = std::max<int64_t>(1, samples);
    step_ = (target - value_) / float(left_);
  }
  float next() {
    if (left_ > 0) value_ = --left_ == 0 ? target_ : value_ + step_;
    return value_;
  }
  float value() const { return value_; }
  bool gliding() const { return left_ > 0; }

 private:
  float value_, target_, step_ = 0;
  int64_t left_ = 0;
};

/// A fixed delay of one channel, for paths that meet with different latencies (allocation-free
/// after construction).
class DelayLine {
 public:
  explicit DelayLine(int64_t delay) : buffer_(size_t(delay), 0.0f) {}
  /// out may be in.
  void process(const float* in, float* out, int64_t n) {
    if (buffer_.empty()) {
      if (in != out) std::copy(in, in + n, out);
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      const float delayed = buffer_[position_];
      buffer_[position_]  = in[i];
      out[i]              = delayed;
      position_           = position_ + 1 == buffer_.size() ? 0 : position_ + 1;
    }
  }
  void reset() { std::fill(buffer_.begin(), buffer_.end(), 0.0f), position_ = 0; }

 private:
  std::vector<float> buffer_;
  size_t position_ = 0;
};

}  // namespace grafx
