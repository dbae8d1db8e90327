#pragma once
/// The streaming form of a compressor or noise gate: its gain computer and smoothers per sample.

#include <grafx/dsp/dynamics_steps.h>
#include <grafx/stream/form.h>

#include <memory>
#include <vector>

namespace grafx {

/// A compressor's or noise gate's values, as Dynamics::forward computes them
/// (dynamics_form.cpp).
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

}  // namespace grafx
