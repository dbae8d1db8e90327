// grafx bench GRAPH: how fast a graph renders forward, backward and both, and how much memory a
// forward+backward takes, with random sources and initial parameters.

#include "arguments.h"
#include "commands.h"
#include "console_options.h"

#include <grafx/graph/graph_tensor.h>
#include <grafx/memory.h>
#include <grafx/plan/render_plan.h>
#include <grafx/render/parameters.h>
#include <grafx/render/render.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <unistd.h>

namespace grafx::cli {
namespace {

using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  struct Args {
    std::string graph, method = "optimal";
    double seconds         = 3.8;
    SampleRate sample_rate = 30000;
    int64_t repeats = 5, threads = 0;
    bool json = false;
  };
  auto args     = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Time a graph's render (forward, backward, both) and its peak memory, with random "
      "sources and initial parameters");
  cmd->add_option("graph", args->graph, "Graph file (.json)")->required();
  cmd->add_option("--seconds", args->seconds, "Length of the sources")
      ->capture_default_str()
      ->check(finite_number(0, false))
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--sample-rate", args->sample_rate, "Sample rate (Hz)")
      ->capture_default_str()
      ->check(CLI::Range(8000, 192000));
  cmd->add_option("--method", args->method, "Schedule: one-by-one, greedy, beam or optimal")
      ->capture_default_str()
      ->check(CLI::IsMember({"one-by-one", "greedy", "beam", "optimal"}));
  cmd->add_option("--repeats", args->repeats, "Timed runs of each measurement (the median counts)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--threads", args->threads,
                  "CPU threads for LibTorch (default: grafx's --threads, all cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--json", args->json,
                "Print one JSON object (forward_ms, backward_ms, forward_backward_ms, "
                "peak_memory_mib, ...) instead of text");
  cmd->callback([args] {
    if (args->threads > 0) at::set_num_threads(int(args->threads));
    Graph graph           = load_graph_file(args->graph);
    RenderPlan plan       = make_render_plan(to_tensor(graph), parse_schedule_method(args->method));
    Processors processors = make_processors(graph.types(), {args->sample_rate});
    const int64_t length  = std::max<int64_t>(1, std::llround(args->seconds * args->sample_rate));
    at::manual_seed(0);
    const at::Tensor sources = 0.1 * at::randn({plan.n_sources, 2, length});
    const Parameters fixed   = create_parameters(graph, processors, {0, at::kFloat, false});
    Parameters trained       = create_parameters(graph, processors, {0});

    const bool show_status = !args->json && isatty(STDERR_FILENO);  // a live line on terminals
    auto status            = [&](const std::string& what) {
      if (show_status) std::cerr << "\rbench: " << what << "        " << std::flush;
    };
    auto forward = [&] {
      c10::NoGradGuard no_grad;
      render(plan, processors, fixed, sources);
    };
    double backward_ms    = 0;  // of the last forward_backward()
    auto forward_backward = [&] {
      at::Tensor loss          = render(plan, processors, trained, sources).outputs.pow(2).mean();
      const auto backward_from = Clock::now();
      loss.backward();
      backward_ms = milliseconds_since(backward_from);
      for (auto& [type, named] : trained)
        for (auto& [name, tensor] : named) tensor.mutable_grad() = at::Tensor();
    };
    std::vector<double> forward_ms, backward_all_ms, both_ms;
    status("warming up");
    forward();
    forward_backward();
    for (int64_t r = 0; r < args->repeats; ++r) {
      status("run " + std::to_string(r + 1) + "/" + std::to_string(args->repeats));
      auto start = Clock::now();
      forward();
      forward_ms.push_back(milliseconds_since(start));
      start = Clock::now();
      forward_backward();
      both_ms.push_back(milliseconds_since(start));
      backward_all_ms.push_back(backward_ms);
    }
    status("peak memory");
    const double peak_mib = peak_memory_growth_mib(forward_backward);
    if (show_status) std::cerr << "\r" << std::string(40, ' ') << "\r";

    const double f = median(forward_ms), b = median(backward_all_ms), fb = median(both_ms);
    const int threads = at::get_num_threads();
    if (args->json) {
      auto number = [](double value) {  // NaN (memory not measurable) as null
        return std::isfinite(value) ? nlohmann::ordered_json(value) : nlohmann::ordered_json();
      };
      nlohmann::ordered_json result = {{"graph", args->graph},
                                       {"nodes", graph.n_nodes()},
                                       {"calls", plan.n_calls()},
                                       {"method", to_string(plan.method)},
                                       {"threads", threads},
                                       {"seconds", args->seconds},
                                       {"sample_rate", args->sample_rate},
                                       {"repeats", args->repeats},
                                       {"forward_ms", f},
                                       {"backward_ms", b},
                                       {"forward_backward_ms", fb},
                                       {"peak_memory_mib", number(peak_mib)}};
      std::cout << result.dump() << "\n";
      return;
    }
    std::ostringstream memory;
    memory << std::fixed << std::setprecision(1) << peak_mib << " MiB";
    std::cout << args->graph << ": " << graph.n_nodes() << " nodes, " << plan.n_calls()
              << " processor calls (" << to_string(plan.method)
              << (plan.proven_optimal ? ", proven optimal" : "") << ")\n"
              << plan.n_sources << " stereo sources of " << args->seconds << " s at "
              << args->sample_rate << " Hz (float32), initial parameters; " << threads
              << " threads; medians of " << args->repeats << " runs after a warm-up\n"
              << std::fixed << std::setprecision(1) << "  forward (no gradients)  " << std::setw(9)
              << f << " ms\n"
              << "  backward                " << std::setw(9) << b << " ms\n"
              << "  forward+backward        " << std::setw(9) << fb << " ms\n"
              << "  peak memory (f+b)       " << std::setw(13)
              << (std::isfinite(peak_mib) ? memory.str() : "unavailable") << "\n";
  });
}

}  // namespace grafx::cli
