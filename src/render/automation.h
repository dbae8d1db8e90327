#pragma once
// Automation curves turned into values per sample, for the renderers (private to the library).

#include <grafx/render/render.h>

#include <ATen/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace grafx::detail {

/// The values per sample of automation curves `curves` ([R, P, shape...], P points on the
/// clock `automation`; R = B·m, B batch items of m rows) at the `length` samples from each
/// item's first sample on (`time`), sampled at `time.sample_rate`: [R, shape..., length], linear
/// in the raw value between points and held before the first and after the last. Throws
/// RenderError [grafx.render.automation] when `time` has no sample rate or another number of
/// item first samples than B.
at::Tensor curve_values(const at::Tensor& curves, const Automation& automation,
                        const SongTime& time, int64_t B, int64_t length);

/// Makes one processor call's parameters ([R, ...] rows, R = B·m: B batch items of m nodes)
/// per sample where its nodes automate them: the curves are taken out, and each parameter with
/// one (the wet amount too) becomes [R, shape..., length], following the curve in the rows of
/// the nodes that automate it (`automated[i]`: the raw names node i automates) and holding its
/// value in the others'.
void automate_rows(TypeParameters& rows, const std::vector<std::vector<std::string>>& automated,
                   int64_t B, const Automation& automation, const SongTime& time, int64_t length);

}  // namespace grafx::detail
