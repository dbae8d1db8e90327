#include <grafx/dsp/float_math.h>
#include <grafx/stream/curve.h>

#include <algorithm>

namespace grafx {

StreamCurve::StreamCurve(std::vector<float> points, int64_t elements, double samples_per_point)
    : points_(std::move(points)), elements_(elements), samples_per_point_(samples_per_point) {
  for (size_t i = 0; i < points_.size() / size_t(elements); ++i)
    positions_.push_back(double(i) * samples_per_point);
}

void StreamCurve::save(StreamWriter& out, const std::shared_ptr<const StreamCurve>& curve) {
  out.write(curve != nullptr);
  if (curve)
    out.write(curve->points_), out.write(curve->elements_), out.write(curve->samples_per_point_);
}

std::shared_ptr<const StreamCurve> StreamCurve::load(StreamReader& in) {
  if (!in.read<bool>()) return nullptr;
  std::vector<float> points = in.read_vector<float>();
  const int64_t elements    = in.read_count(1, 1 << 16);
  const double spacing      = in.read<double>();
  if (points.empty() || points.size() % size_t(elements) != 0 || !(spacing > 0))
    in.corrupt("an automation curve of no points");
  return std::make_shared<StreamCurve>(std::move(points), elements, spacing);
}

float StreamCurve::at(int64_t sample, int64_t element) const {
  // As dsp::piecewise_linear: the points either side, and the two-sided lerp in float.
  const double t   = double(sample);
  const auto next  = std::upper_bound(positions_.begin(), positions_.end(), t) - positions_.begin();
  const auto last  = int64_t(positions_.size()) - 1;
  const auto below = std::max<int64_t>(next - 1, 0), above = std::min<int64_t>(next, last);
  const float lo = points_[size_t(below * elements_ + element)];
  if (below == above) return lo;
  const float hi = points_[size_t(above * elements_ + element)];
  const float w  = float((t - positions_[size_t(below)]) /
                        (positions_[size_t(above)] - positions_[size_t(below)]));
  return dsp::lerp_two_sided(lo, hi, w);
}

}  // namespace grafx
