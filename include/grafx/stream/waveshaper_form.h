#pragma once
/// The streaming form of a waveshaper (distortion): its curve and gains per sample.

#include <grafx/stream/form.h>

#include <memory>
#include <vector>

namespace grafx {

/// A waveshaper's curve and gains, as Distortion::forward computes them (waveshaper_form.cpp).
struct WaveshaperForm {
  enum class Curve : int32_t { kTanh, kPiecewiseTanh, kPower, kChebyshev };
  Curve curve       = Curve::kTanh;
  bool squash_terms = false, bias = false, pre_gain = false, own_post_gain = false;
  float b = 0, tanh_b = 0;                // tanh with a bias
  float k[2] = {}, h[2] = {}, t[2] = {};  // piecewise: thresholds, hardness
  std::vector<float> weights;             // power and Chebyshev: tanh(w_k)
  float pre_gain_value = 1, post_gain_value = 1;
  int64_t channels       = 1;
  SampleRate sample_rate = 44100;
  std::vector<StreamControl> controls;  // drive_db, makeup_db
};
std::unique_ptr<NodeStream> waveshaper_stream(WaveshaperForm form);

}  // namespace grafx
