#pragma once
// The streaming forms of the processors (grafx/processors/node_stream.h), made from plain data:
// the processors' make_stream compute that data with LibTorch, and load_node_stream reads it
// back where there is none. Each form lives in its processor's `*_stream.cpp`, which uses no
// LibTorch.

#include <grafx/dsp/dynamics_steps.h>
#include <grafx/dsp/stream_convolution.h>
#include <grafx/processors/node_stream.h>

#include <memory>
#include <vector>

namespace grafx {

/// A linear processor's impulse responses from its inlets' channels (inputs, in order) to its
/// outlets' (outputs), convolved with a latency of `latency` samples (node_stream.cpp).
std::unique_ptr<NodeStream> impulse_response_stream(
    int64_t n_inputs, std::vector<int64_t> outlet_channels,
    std::vector<dsp::StreamConvolverMatrix::Path> paths, int64_t latency, int64_t max_block);
std::unique_ptr<NodeStream> load_impulse_response_stream(StreamReader& in, int64_t max_block);
std::unique_ptr<NodeStream> load_matrix_stream(StreamReader& in, int64_t max_block);

/// A compressor's or noise gate's values, as Dynamics::forward computes them
/// (compressor_stream.cpp).
struct DynamicsForm {
  /// What a control sets.
  enum class Control : int32_t {
    kThreshold,
    kRatio,
    kKnee,
    kLevelOnePole,
    kLevelAttack,
    kLevelRelease,
    kGainOnePole,
    kGainAttack,
    kGainRelease,
  };
  /// A smoother of one value per sample: its kind and coefficients.
  struct Smoother {
    dsp::EnvelopeSmoothing kind = dsp::EnvelopeSmoothing::kNone;
    float alpha = 0, gain_rise = 0, gain_fall = 0;
  };
  bool gate = false, amplitude_detection = false, log_domain = false;
  dsp::Knee knee  = dsp::Knee::kQuadratic;
  float threshold = 0, scale = 0, width = 0;  // T, s and w as forward computes them
  Smoother level, gain;
  int64_t channels       = 1;
  SampleRate sample_rate = 44100;
  std::vector<StreamControl> controls;
  std::vector<Control> sets;                           // per control
  std::shared_ptr<const StreamCurve> threshold_curve;  // raw log_threshold, where automated
  int64_t input_latency = 0;
};
std::unique_ptr<NodeStream> dynamics_stream(DynamicsForm form);
std::unique_ptr<NodeStream> load_dynamics_stream(StreamReader& in, int64_t max_block);

/// A waveshaper's curve and gains, as Distortion::forward computes them (distortion_stream.cpp).
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
std::unique_ptr<NodeStream> load_waveshaper_stream(StreamReader& in, int64_t max_block);

/// A container's members in series (no weights) or summed with `weights` (containers_stream.cpp).
std::unique_ptr<NodeStream> container_stream(std::vector<std::unique_ptr<NodeStream>> members,
                                             std::vector<float> weights, int64_t channels,
                                             int64_t max_block);
std::unique_ptr<NodeStream> load_container_stream(StreamReader& in, int64_t max_block);

}  // namespace grafx
