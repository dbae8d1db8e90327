// Derivatives benchmark: what each kind of derivative of a render costs, in time and peak
// memory, on the fit's setting (the 8-track, 3-group console of the paper's processors, stereo,
// 3.8 s at 30 kHz, the mix loss): the forward render alone, the gradient by LibTorch's autograd
// and by the explicit adjoint plan (both memory policies), a Jacobian-vector product in forward
// mode, and a Hessian-vector product forward over reverse and reverse over reverse, timed
// alternately in one run.
//
//   build/bin/derivatives_bench [seconds=3.8] [sample_rate=30000]

#include <grafx/graph/console.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/loss/mix_loss.h>
#include <grafx/memory.h>
#include <grafx/processors/registry.h>
#include <grafx/program.h>
#include <grafx/render/adjoint.h>
#include <grafx/render/derivatives.h>
#include <grafx/render/parameters.h>

#include "bench_support.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>

#include <iostream>

using namespace grafx;

namespace {

int run(int argc, char** argv) {
  std::vector<double> arguments = bench::parse_arguments(
      argc, argv, {{"seconds", 3.8, 1.1, 60}, {"sample_rate", 30000, 8000, 96000}});
  bench::setup_threads();
  const double seconds      = arguments[0];
  const int64_t sample_rate = int64_t(arguments[1]);
  const int64_t length      = int64_t(seconds * double(sample_rate));
  std::cout << "# Derivatives\n\n"
            << bench::machine_description() << "\n\nThe 8-track, 3-group console of the paper's "
            << "processors; stereo sources of " << seconds << " s at " << sample_rate
            << " Hz, float32; the mix loss (1 s warm-up skipped).\n\n";

  ConsoleOptions options;
  options.n_tracks      = 8;
  options.track_groups  = ConsoleOptions::even_groups(8, 3);
  options.chain         = default_console_chain();
  Graph graph           = build_console(options, registry_node_types()).graph;
  Processors processors = make_processors(graph.types(), {SampleRate(sample_rate)});
  RenderPlan plan       = make_render_plan(to_tensor(graph), ScheduleMethod::kOptimal);
  Parameters parameters = create_parameters(graph, processors, {0, at::kFloat, false});
  at::manual_seed(0);
  at::Tensor sources = at::randn({8, 2, length}) * 0.1;
  at::Tensor target  = at::randn({1, 2, length}) * 0.1;
  MixLossOptions loss_options;
  loss_options.sample_rate  = SampleRate(sample_rate);
  loss_options.skip_samples = sample_rate;
  MixLoss mix_loss(loss_options);
  Parameters direction;
  for (const auto& [type, named] : parameters)
    for (const auto& [name, t] : named.named()) direction[type][name] = at::randn_like(t);

  auto leaves = [&] {
    Parameters p;
    for (const auto& [type, named] : parameters)
      for (const auto& [name, t] : named.named())
        p[type][name] = t.detach().clone().requires_grad_(true);
    return p;
  };
  auto loss_of = [&](const Parameters& p) {
    return mix_loss(render(plan, processors, p, sources).outputs, target);
  };
  auto adjoint = [&](MemoryPolicy policy) {
    AdjointOptions adjoint_options;
    adjoint_options.source_gradients = false;
    for (const auto& [type, named] : parameters) adjoint_options.memory[type] = policy;
    AdjointRender run(plan, processors, parameters, sources, adjoint_options);
    at::Tensor y         = run.result().outputs.detach().requires_grad_(true);
    at::Tensor cotangent = torch::autograd::grad({mix_loss(y, target)}, {y})[0];
    run.backward(cotangent);
  };
  struct Row {
    std::string name;
    std::function<void()> work;
  };
  std::vector<Row> rows = {
      {"forward render (no gradient)",
       [&] {
         c10::NoGradGuard no_grad;
         loss_of(parameters);
       }},
      {"gradient: LibTorch autograd", [&] { loss_of(leaves()).backward(); }},
      {"gradient: adjoint plan, save", [&] { adjoint(MemoryPolicy::kSave); }},
      {"gradient: adjoint plan, recompute", [&] { adjoint(MemoryPolicy::kRecompute); }},
      {"J·v of the outputs: forward mode (jvp)",
       [&] { jvp(plan, processors, parameters, sources, direction); }},
      {"H·v: forward over reverse (hvp)", [&] { hvp(loss_of, parameters, direction); }},
      {"H·v: reverse over reverse (double backward)",
       [&] {
         Parameters p = leaves();
         std::vector<at::Tensor> flat, v;
         for (const auto& [type, named] : p)
           for (const auto& [name, t] : named.named()) {
             flat.push_back(t);
             v.push_back(direction.at(type).at(name));
           }
         auto g         = torch::autograd::grad({loss_of(p)}, flat, {}, true, true, true);
         at::Tensor dot = at::zeros({});
         for (size_t i = 0; i < g.size(); ++i)
           if (g[i].defined()) dot = dot + (g[i] * v[i]).sum();
         torch::autograd::grad({dot}, flat, {}, false, false, true);
       }},
  };
  // Alternate the rows, three rounds, and keep each row's best median.
  std::vector<double> best(rows.size(), 1e300);
  for (int round = 0; round < 3; ++round)
    for (size_t i = 0; i < rows.size(); ++i)
      best[i] = std::min(best[i], bench::time_it(rows[i].work, 2, 0.5).median_ms);
  bench::Table table({"derivative", "time (ms)", "× forward", "peak memory growth (MiB)"});
  for (size_t i = 0; i < rows.size(); ++i) {
    const double mib = peak_memory_growth_mib(rows[i].work);
    table.add_row({rows[i].name, bench::fixed(best[i], 0), bench::fixed(best[i] / best[0], 2),
                   bench::fixed(mib, 0)});
  }
  table.print(std::cout);
  return 0;
}

}  // namespace

// Errors end the program as they end the grafx CLI: one line with a code, status 1.
int main(int argc, char** argv) {
  return grafx::run_program("derivatives_bench", [&] { return run(argc, argv); });
}
