#pragma once
/// Channel converters (GRAFX's MonoToStereo, StereoToMidSide, MidSideToStereo): nodes whose
/// outputs have another channel count than their inputs. No parameters.
///
/// | type                 | letter | inlets          | outlets         | math                          |
/// |----------------------|--------|-----------------|-----------------|-------------------------------|
/// | `mono_to_stereo`     | u      | `main` (any)    | `main` (2 ch)   | y_L = y_R = mean_c x_c        |
/// | `stereo_to_mid_side` | y      | `main` (1–2 ch) | `mid`, `side` (1 ch each) | M = (L + R)/√2, S = (L − R)/√2 |
/// | `mid_side_to_stereo` | j      | `mid`, `side`   | `main` (2 ch)   | L = (M + S)/√2, R = (M − S)/√2 |
///
/// The split and the merge are orthonormal (GRAFX's `normalize=True`), so merging a split gives
/// the input back exactly and keeps energy. A mono input is its dual-mono stereo (L = R = x: mid
/// √2·x, side 0); where a converter expects mono (`mono_to_stereo`'s input, the merge's mid and
/// side) a stereo signal is taken by the mean of its channels, which is the signal itself for
/// dual mono. So every converter gives the same result for a mono signal and its dual-mono
/// stereo, as the renderers require (render/render.h, "channels").

#include <grafx/processors/descriptor.h>
#include <grafx/processors/linear_processor.h>

namespace grafx {

ProcessorDescriptor mono_to_stereo_descriptor();      ///< letter u
ProcessorDescriptor stereo_to_mid_side_descriptor();  ///< letter y
ProcessorDescriptor mid_side_to_stereo_descriptor();  ///< letter j

class ChannelConverter : public LinearProcessor {
 public:
  enum class Conversion { kMonoToStereo, kStereoToMidSide, kMidSideToStereo };

  ChannelConverter(const ProcessorConfig& config, Conversion conversion);
  std::string name() const override;
  std::vector<std::string> inlets() const override;
  std::vector<std::string> outlets() const override;
  std::vector<ParameterSpec> parameter_specs() const override { return {}; }
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  TemporalSupport temporal_support(const TensorDict&) const override {
    return TemporalSupport::pointwise();
  }

 private:
  Conversion conversion_;
};

}  // namespace grafx
