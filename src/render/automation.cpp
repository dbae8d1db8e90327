#include "render/automation.h"

#include "common/tensors.h"

#include <grafx/dsp/signal.h>
#include <grafx/error.h>
#include <grafx/render/parameters.h>
#include <grafx/tensors.h>

#include <ATen/ATen.h>

#include <algorithm>

namespace grafx::detail {

at::Tensor curve_values(const at::Tensor& curves, const Automation& automation,
                        const SongTime& time, int64_t B, int64_t length) {
  if (!(time.sample_rate > 0))
    throw RenderError("grafx.render.automation",
                      "the graph automates parameters, so rendering it needs the sample rate of "
                      "the sources (RenderOptions::time)");
  const auto& items = time.item_first_samples;
  if (!items.empty() && int64_t(items.size()) != B)
    throw RenderError("grafx.render.automation",
                      "expected the first sample of each of the " + std::to_string(B) +
                          " batch items (RenderOptions::time), but got " +
                          std::to_string(items.size()));
  if (time.first_samples.defined()) {  // read on the device: no host value per crop
    const at::Tensor& firsts = time.first_samples;
    if (firsts.dim() != 1 || (firsts.size(0) != B && firsts.size(0) != 1))
      throw RenderError("grafx.render.automation",
                        "expected the first sample of each of the " + std::to_string(B) +
                            " batch items, or one for all, on the device (RenderOptions::time), "
                            "but got a tensor of shape " +
                            shape_text(firsts.sizes()));
    const double points_per_sample = automation.rate_hz / double(time.sample_rate);
    const at::Tensor first_points  = (firsts.to(curves.device(), at::kDouble) * points_per_sample)
                                        .view({-1, 1})
                                        .expand({B, curves.size(0) / B})
                                        .reshape({-1});
    return dsp::piecewise_linear_at(curves, first_points, points_per_sample, length);
  }
  auto path_from = [&](const at::Tensor& rows, int64_t first_sample) {
    std::vector<double> positions;  // of the points, in samples from the first
    for (int64_t i = 0; i < rows.size(1); ++i)
      positions.push_back(double(i) * double(time.sample_rate) / automation.rate_hz -
                          double(first_sample));
    return dsp::piecewise_linear(rows, positions, length);
  };
  if (items.empty()) return path_from(curves, time.first_sample);
  std::vector<at::Tensor> paths;
  const std::vector<at::Tensor> per_item = curves.chunk(B);
  for (int64_t b = 0; b < B; ++b) paths.push_back(path_from(per_item[size_t(b)], items[size_t(b)]));
  return at::cat(paths);
}

void automate_rows(TypeParameters& rows, const std::vector<std::vector<std::string>>& automated,
                   int64_t B, const Automation& automation, const SongTime& time, int64_t length) {
  const TensorDict curves = std::move(rows.curves);
  rows.curves.clear();
  for (const auto& [name, curve_rows] : curves) {
    std::vector<int64_t> follows;  // per node: whether it automates `name`
    for (const auto& names : automated)
      follows.push_back(std::binary_search(names.begin(), names.end(), name) ? 1 : 0);
    const auto n_follow = std::count(follows.begin(), follows.end(), 1);
    if (n_follow == 0) continue;
    at::Tensor& parameter = rows.at(name);
    at::Tensor values     = curve_values(curve_rows, automation, time, B, length);
    if (n_follow < int64_t(follows.size())) {  // the other nodes hold their value
      const at::Tensor& held = parameter;      // [R, shape...]
      std::vector<int64_t> per_row(size_t(held.dim()) + 1, 1);
      per_row[0] = -1;
      std::vector<int64_t> per_item_row;  // as the batch's rows lie: B times the nodes
      for (int64_t b = 0; b < B; ++b)
        per_item_row.insert(per_item_row.end(), follows.begin(), follows.end());
      at::Tensor has = device_index(per_item_row, held.device()) > 0;  // made once per device
      values         = at::where(has.view(per_row), values, held.unsqueeze(-1));
    }
    parameter = values;
  }
}

}  // namespace grafx::detail
