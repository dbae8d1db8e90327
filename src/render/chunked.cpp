#include <grafx/error.h>
#include <grafx/render/chunked.h>

#include "render/checks.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <map>

namespace grafx {

namespace {

/// A type's raw parameters as its processor takes them: N×... rows (per-item B×N×... rows
/// flattened), without the dry/wet amount the renderer applies. Where parameters follow
/// automation curves, every point adds rows (the nodes' other parameters beside it): a support
/// is widest at one of the values a curve passes through, and those lie between its points.
TensorDict support_rows(const Processor& processor, const TypeParameters& parameters) {
  auto rows_of = [](const at::Tensor& t, size_t rank) {
    return t.dim() == int64_t(rank) + 2 ? t.flatten(0, 1) : t;
  };
  std::map<std::string, at::Tensor> curves;  // [N, points, shape...]
  for (const auto& spec : processor.parameter_specs()) {
    auto curve = parameters.curves.find(spec.name);
    if (curve != parameters.curves.end())
      curves[spec.name] = rows_of(curve->second, spec.shape.size() + 1);
  }
  const int64_t points = curves.empty() ? 0 : curves.begin()->second.size(1);
  TensorDict rows;
  for (const auto& spec : processor.parameter_specs()) {
    at::Tensor fixed = rows_of(parameters.own.at(spec.name), spec.shape.size());
    auto curve       = curves.find(spec.name);
    std::vector<at::Tensor> copies{fixed};
    for (int64_t p = 0; p < points; ++p)
      copies.push_back(curve == curves.end() ? fixed : curve->second.select(1, p));
    rows[spec.name] = points ? at::cat(copies) : fixed;
  }
  return rows;
}

}  // namespace

TemporalSupport temporal_support(const RenderPlan& plan, const Processors& processors,
                                 const Parameters& parameters) {
  std::map<TypeId, TemporalSupport> of_type;  // of the processor types with nodes to render
  for (const auto& step : plan.steps) {
    if (is_utility_type(step.type) || of_type.count(step.type)) continue;
    const std::string& name = plan.types.name(step.type);
    auto given              = parameters.find(name);
    const Processor& p      = *processors.at(name);
    of_type[step.type]      = p.temporal_support(
             support_rows(p, given == parameters.end() ? TypeParameters{} : given->second));
  }
  // Steps run in a topological order: each step's support is its type's after the widest of
  // the steps it reads (one value per step: its nodes share the type).
  std::vector<int64_t> writer(size_t(plan.n_buffer_rows), 0);
  for (size_t k = 0; k < plan.steps.size(); ++k)
    for (int64_t row : plan.steps[k].writes.rows()) writer[size_t(row)] = int64_t(k);
  std::vector<TemporalSupport> of_step(plan.steps.size());
  for (size_t k = 1; k < plan.steps.size(); ++k) {
    TemporalSupport before;
    for (const auto& read : plan.steps[k].reads)
      for (int64_t row : read.rows.rows())
        before = before.widest(of_step[size_t(writer[size_t(row)])]);
    auto own   = of_type.find(plan.steps[k].type);  // none for mix and out
    of_step[k] = own == of_type.end() ? before : before.then(own->second);
  }
  return of_step.back();
}

ChunkOptions ChunkOptions::whole_song(SampleRate sample_rate) {
  ChunkOptions options;
  options.render.time = {sample_rate, 0};
  return options;
}

ChunkWindow ChunkWindow::of(int64_t start, int64_t chunk_samples, int64_t length,
                            const TemporalSupport& support) {
  ChunkWindow w;
  w.start = start;
  w.end   = std::min(length, start + chunk_samples);
  w.first = start - std::min(support.past_samples, start);
  w.last  = w.end + std::min(support.future_samples, length - w.end);
  return w;
}

void render_chunks(const RenderPlan& plan, const Processors& processors,
                   const Parameters& parameters, const at::Tensor& sources,
                   const std::function<void(int64_t start, const at::Tensor& outputs)>& consume,
                   const ChunkOptions& options) {
  if (options.chunk_samples < 1)
    throw RenderError(
        "grafx.render.chunk_size",
        "expected at least one sample per chunk, but got " + std::to_string(options.chunk_samples));
  // The checks of render, once for the whole song (the chunks then skip the finiteness scans).
  const bool batched = detail::check_sources(plan.n_sources, sources, options.render.check_finite);
  auto per_item      = detail::check_parameters(
           plan.types, plan.n_graph_nodes, detail::NodeExtras::of(plan), processors, parameters,
      batched ? sources.size(0) : 0, sources.scalar_type(), sources.device());
  if (options.render.check_finite) detail::check_finite_parameters(parameters, per_item);
  RenderOptions each       = options.render;
  each.check_finite        = false;
  const int64_t song_start = options.render.time.first_sample;
  c10::NoGradGuard no_grad;
  const TemporalSupport support = temporal_support(plan, processors, parameters);
  const int64_t length          = sources.size(-1);
  for (int64_t start = 0;; start += options.chunk_samples) {
    const ChunkWindow w    = ChunkWindow::of(start, options.chunk_samples, length, support);
    each.time.first_sample = song_start + w.first;  // the chunk reads the curves over its span
    at::Tensor outputs =
        render(plan, processors, parameters, sources.narrow(-1, w.first, w.last - w.first), each)
            .outputs;
    consume(start, outputs.narrow(-1, start - w.first, w.end - start));
    if (w.end == length) break;
  }
}

at::Tensor render_in_chunks(const RenderPlan& plan, const Processors& processors,
                            const Parameters& parameters, const at::Tensor& sources,
                            const ChunkOptions& options) {
  at::Tensor whole;
  render_chunks(
      plan, processors, parameters, sources,
      [&](int64_t start, const at::Tensor& outputs) {
        if (!whole.defined()) {
          std::vector<int64_t> shape = outputs.sizes().vec();
          shape.back()               = sources.size(-1);
          whole                      = at::empty(shape, outputs.options());
        }
        whole.narrow(-1, start, outputs.size(-1)).copy_(outputs);
      },
      options);
  return whole;
}

}  // namespace grafx
