// Render benchmark: forward and forward+backward time of mixing consoles (the paper's
// processors, stereo, 3.8 s at 30 kHz) under every schedule, against the naive per-node
// reference and a GRAFX-style renderer (one shared, autograd-tracked signal buffer written in
// place, reads cloned), in one run; and peak memory of a forward+backward render, by autograd
// and by the explicit adjoint plan with either memory policy.
//
//   build/bin/render_bench [seconds=3.8] [sample_rate=30000]

#include <grafx/graph/console.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/memory.h>
#include <grafx/processors/registry.h>
#include <grafx/program.h>
#include <grafx/render/adjoint.h>
#include <grafx/render/parameters.h>
#include <grafx/render/render.h>

#include "bench_support.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <sstream>

using namespace grafx;

namespace {

/// GRAFX's render loop (render_grafx, grafx.md §2.4) on our plan: one buffer [B, rows, C, L],
/// reads by narrow+clone or index_select, aggregation, writes by in-place slice assignment.
at::Tensor render_grafx_style(const RenderPlan& plan, const Processors& processors,
                              const Parameters& parameters, const at::Tensor& sources) {
  const int64_t C = sources.size(1), L = sources.size(2);
  at::Tensor buffer = at::zeros({plan.n_buffer_rows, C, L}, sources.options());
  at::Tensor outputs;
  for (const auto& step : plan.steps) {
    const int64_t m = int64_t(step.nodes.size());
    if (step.type == NodeTypes::kIn) {
      buffer.narrow(0, step.writes.start, m).copy_(sources);
      continue;
    }
    std::vector<at::Tensor> inputs;
    for (const auto& read : step.reads) {
      at::Tensor x = read.rows.kind == RowAccess::Kind::kSlice
                         ? buffer.narrow(0, read.rows.start, read.rows.size()).clone()
                         : buffer.index_select(0, at::tensor(read.rows.index, at::kLong));
      if (read.aggregation == Aggregation::kSum) x = x.sum(0, true);
      if (read.aggregation == Aggregation::kSegmentSum)
        x = at::zeros({m, C, L}, x.options()).index_add(0, at::tensor(read.segments, at::kLong), x);
      inputs.push_back(x);
    }
    if (step.type == NodeTypes::kOut) {
      outputs = inputs[0];
      continue;
    }
    std::vector<at::Tensor> produced = {inputs[0]};
    if (step.type != NodeTypes::kMix) {
      TensorDict p;
      for (const auto& [name, t] : parameters.at(plan.types.name(step.type)).named())
        p[name] = t.narrow(0, step.parameter_rows.start, m);
      produced = processors.at(plan.types.name(step.type))->forward(inputs, p).outputs;
    }
    buffer.narrow(0, step.writes.start, m).copy_(produced[0]);  // in place, tracked by autograd
  }
  return outputs;
}

struct BenchGraph {
  std::string name;
  Graph graph;
};

int run(int argc, char** argv) {
  std::vector<double> arguments = bench::parse_arguments(
      argc, argv, {{"seconds", 3.8, 0.01, 600}, {"sample_rate", 30000, 8000, 192000}});
  bench::setup_threads();
  const double seconds      = arguments[0];
  const int64_t sample_rate = int64_t(arguments[1]);
  const int64_t length      = int64_t(seconds * double(sample_rate));
  std::cout << "# Rendering\n\n"
            << bench::machine_description() << "\n\nStereo sources of " << seconds << " s at "
            << sample_rate << " Hz (" << length
            << " samples), float32, batch 1; the paper's processors.\n\n";

  std::vector<BenchGraph> consoles;
  auto console = [](int64_t tracks, int64_t groups, int64_t prune_seed) {
    ConsoleOptions options;
    options.chain        = default_console_chain();
    options.n_tracks     = tracks;
    options.track_groups = ConsoleOptions::even_groups(tracks, groups);
    Graph g              = build_console(options, registry_node_types()).graph;
    if (prune_seed >= 0) {
      PruneOptions prune;
      prune.probability = random_pruning_rates();
      prune.seed        = uint64_t(prune_seed);
      prune_randomly(g, prune);
    }
    return g;
  };
  consoles.push_back({"8 tracks, 3 groups, full", console(8, 3, -1)});
  consoles.push_back({"8 tracks, 3 groups, pruned", console(8, 3, 1)});
  consoles.push_back({"28 tracks, 5 groups, pruned", console(28, 5, 2)});

  bench::Table table({"console", "nodes", "method", "calls", "forward (ms)", "backward (ms)",
                      "forward+backward (ms)", "speed-up vs one-by-one (f+b)"});
  for (const auto& c : consoles) {
    GraphTensor tensor    = to_tensor(c.graph);
    Processors processors = make_processors(c.graph.types(), {sample_rate});
    Parameters trained    = create_parameters(c.graph, processors, {0});
    Parameters fixed      = create_parameters(c.graph, processors, {0, at::kFloat, false});
    at::manual_seed(0);
    at::Tensor sources = at::randn({c.graph.count_per_type()[NodeTypes::kIn], 2, length}) * 0.1;
    std::vector<double> backward_ms;  // the backward part of each forward+backward
    auto backward = [&](const at::Tensor& y) {
      at::Tensor loss = y.pow(2).mean();
      auto start      = std::chrono::steady_clock::now();
      loss.backward();
      backward_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
      for (auto& [type, named] : trained)
        for (auto& [name, p] : named.named()) p.mutable_grad() = at::Tensor();
    };
    auto backward_median = [&] {  // of the runs since the last call
      std::sort(backward_ms.begin(), backward_ms.end());
      const double median = backward_ms[backward_ms.size() / 2];
      backward_ms.clear();
      return bench::fixed(median, 0);
    };
    double one_by_one = 0;
    for (auto method : {ScheduleMethod::kOneByOne, ScheduleMethod::kGreedy, ScheduleMethod::kBeam,
                        ScheduleMethod::kOptimal}) {
      RenderPlan plan = make_render_plan(tensor, method);
      auto forward    = bench::time_it([&] { render(plan, processors, fixed, sources); }, 3, 1.0);
      backward_ms.clear();
      auto both = bench::time_it(
          [&] { backward(render(plan, processors, trained, sources).outputs); }, 3, 1.0);
      if (method == ScheduleMethod::kOneByOne) one_by_one = both.median_ms;
      table.add_row({c.name, std::to_string(c.graph.n_nodes()), to_string(method),
                     std::to_string(plan.n_calls()), bench::fixed(forward.median_ms, 0),
                     backward_median(), bench::fixed(both.median_ms, 0),
                     bench::fixed(one_by_one / both.median_ms, 2) + "×"});
    }
    RenderPlan optimal = make_render_plan(tensor, ScheduleMethod::kOptimal);
    auto grafx_forward = bench::time_it(
        [&] {
          c10::NoGradGuard no_grad;
          render_grafx_style(optimal, processors, fixed, sources);
        },
        3, 1.0);
    backward_ms.clear();
    auto grafx_both = bench::time_it(
        [&] { backward(render_grafx_style(optimal, processors, trained, sources)); }, 3, 1.0);
    table.add_row({c.name, std::to_string(c.graph.n_nodes()), "GRAFX-style buffer (optimal plan)",
                   std::to_string(optimal.n_calls()), bench::fixed(grafx_forward.median_ms, 0),
                   backward_median(), bench::fixed(grafx_both.median_ms, 0),
                   bench::fixed(one_by_one / grafx_both.median_ms, 2) + "×"});
    auto naive_forward =
        bench::time_it([&] { render_naive(c.graph, processors, fixed, sources); }, 3, 1.0);
    backward_ms.clear();
    auto naive_both = bench::time_it(
        [&] { backward(render_naive(c.graph, processors, trained, sources).outputs); }, 3, 1.0);
    table.add_row({c.name, std::to_string(c.graph.n_nodes()), "naive per-node reference", "–",
                   bench::fixed(naive_forward.median_ms, 0), backward_median(),
                   bench::fixed(naive_both.median_ms, 0),
                   bench::fixed(one_by_one / naive_both.median_ms, 2) + "×"});
  }
  table.print(std::cout);

  // Peak memory of one forward+backward render of a console of about 100 nodes (after the
  // timings: measuring slows allocation down; grafx/memory.h).
  Graph hundred           = console(10, 2, -1);
  Processors processors   = make_processors(hundred.types(), {sample_rate});
  at::Tensor sources      = at::randn({10, 2, length}) * 0.1;
  const double signal_mib = double(2 * length * 4) / (1 << 20);
  std::cout << "\nPeak memory of one forward+backward render of a " << hundred.n_nodes()
            << "-node console (10 tracks, 2 groups, full); one stereo signal is "
            << bench::fixed(signal_mib, 2) << " MiB.\n\n";
  bench::Table memory({"renderer", "peak memory growth (MiB)", "in signals"});
  GraphTensor tensor = to_tensor(hundred);
  for (auto method : {ScheduleMethod::kOneByOne, ScheduleMethod::kOptimal}) {
    RenderPlan plan = make_render_plan(tensor, method);
    double mib      = peak_memory_growth_mib([&] {
      Parameters p = create_parameters(hundred, processors, {0});
      render(plan, processors, p, sources).outputs.pow(2).mean().backward();
    });
    memory.add_row(
        {"grafx, " + to_string(method), bench::fixed(mib, 0), bench::fixed(mib / signal_mib, 0)});
  }
  RenderPlan optimal = make_render_plan(tensor, ScheduleMethod::kOptimal);
  double grafx_mib   = peak_memory_growth_mib([&] {
    Parameters p = create_parameters(hundred, processors, {0});
    render_grafx_style(optimal, processors, p, sources).pow(2).mean().backward();
  });
  memory.add_row({"GRAFX-style buffer, optimal", bench::fixed(grafx_mib, 0),
                  bench::fixed(grafx_mib / signal_mib, 0)});
  // The explicit backward pass (render/adjoint.h) of the same loss, mean(y²).
  auto adjoint = [&](MemoryPolicy policy) {
    Parameters p = create_parameters(hundred, processors, {0});
    AdjointOptions options;
    for (const auto& [type, tensors] : p) options.memory[type] = policy;
    AdjointRender run(optimal, processors, p, sources, options);
    const at::Tensor& y = run.result().outputs;
    run.backward(y * (2.0 / double(y.numel())));
  };
  for (auto policy : {MemoryPolicy::kSave, MemoryPolicy::kRecompute}) {
    double mib = peak_memory_growth_mib([&] { adjoint(policy); });
    memory.add_row({"grafx adjoint plan, optimal, " + to_string(policy), bench::fixed(mib, 0),
                    bench::fixed(mib / signal_mib, 0)});
  }
  memory.print(std::cout);

  // Their times, alternating in one run.
  std::cout << "\nForward+backward time of the same render (median of 3 or more runs).\n\n";
  bench::Table times({"backward by", "forward+backward (ms)"});
  auto autograd_ms = bench::time_it(
      [&] {
        Parameters p = create_parameters(hundred, processors, {0});
        render(optimal, processors, p, sources).outputs.pow(2).mean().backward();
      },
      3, 1.0);
  auto save_ms      = bench::time_it([&] { adjoint(MemoryPolicy::kSave); }, 3, 1.0);
  auto recompute_ms = bench::time_it([&] { adjoint(MemoryPolicy::kRecompute); }, 3, 1.0);
  times.add_row({"LibTorch autograd", bench::fixed(autograd_ms.median_ms, 0)});
  times.add_row({"adjoint plan, save", bench::fixed(save_ms.median_ms, 0)});
  times.add_row({"adjoint plan, recompute", bench::fixed(recompute_ms.median_ms, 0)});
  times.print(std::cout);
  return 0;
}

}  // namespace

// Errors end the program as they end the grafx CLI: one line with a code, status 1.
int main(int argc, char** argv) {
  return grafx::run_program("render_bench", [&] { return run(argc, argv); });
}
