#pragma once
/// Automation curves as streams play them: a raw parameter's points, read sample by sample on
/// the song's clock.

#include <grafx/stream/program_data.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace grafx {

/// An automation curve played back sample by sample on the song's clock, as the offline render
/// interpolates it: linear in the raw value between points, held before the first and after the
/// last (render/automation.h).
class StreamCurve {
 public:
  /// `points`: [n_points × elements] raw values; the points lie every `samples_per_point`
  /// samples of the song from its start.
  StreamCurve(std::vector<float> points, int64_t elements, double samples_per_point);
  /// The raw value of `element` at song sample `sample`.
  float at(int64_t sample, int64_t element) const;
  int64_t elements() const { return elements_; }
  /// Writes a flag, then `curve` where there is one (forms follow curves only where a
  /// parameter is automated); load reads it back, null where none was saved.
  static void save(StreamWriter& out, const std::shared_ptr<const StreamCurve>& curve);
  static std::shared_ptr<const StreamCurve> load(StreamReader& in);

 private:
  std::vector<float> points_;
  int64_t elements_;
  double samples_per_point_;
  std::vector<double> positions_;  // of the points, in samples
};

}  // namespace grafx
