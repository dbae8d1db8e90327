// Where a fit step's time goes on a device: LibTorch's profiler (Kineto) around fitting steps of
// device_bench's console (8 tracks, 3 groups, dry/wet, 3.8 s crops at 30 kHz), launched and
// captured, and around forward+backward renders of the paper's console and of the same console
// built of biquad EQs and ballistics dynamics, each after warm-up steps. Writes one Chrome trace
// per case into FOLDER (fit_step.json, fit_step_captured.json, forward_backward.json,
// forward_backward_iir.json), which
// bench/profile_summary.py turns into the table of docs/benchmarks.md ("Where a GPU step's time
// goes"): kernels launched, device busy time against wall time, the operations that take the
// most device time, and every host synchronisation. On a machine without CUDA it profiles the
// CPU (operators only).
//
//   build/bin/device_profile FOLDER [steps=3]
//   python3 bench/profile_summary.py FOLDER/fit_step.json --steps 3

#include <grafx/error.h>
#include <grafx/fit/fit.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/program.h>
#include <grafx/render/parameters.h>
#include <grafx/render/render.h>

#include "bench_support.h"
#include "device_consoles.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <filesystem>
#include <iostream>

using namespace grafx;
using bench::device_console;
using bench::kConsoleCrop;
using bench::kConsoleRate;
using bench::synchronize;
namespace profiler = torch::autograd::profiler;

namespace {

/// Runs `work` `steps` times under the profiler, the device synchronised before and after, and
/// saves the trace.
void profile(const std::string& path, at::Device device, int steps,
             const std::function<void()>& work) {
  using torch::profiler::impl::ActivityType;
  using torch::profiler::impl::ProfilerConfig;
  using torch::profiler::impl::ProfilerState;
  std::set<ActivityType> activities = {ActivityType::CPU};
  if (device.is_cuda()) activities.insert(ActivityType::CUDA);
  const ProfilerConfig config(ProfilerState::KINETO);
  const auto no_kineto = [] {
    return Error("grafx.bench.profiler",
                 "this LibTorch cannot write traces (it was built without Kineto, as Debian's "
                 "is): run device_profile against PyTorch's LibTorch (scripts/device-check.sh)");
  };
  try {
    profiler::prepareProfiler(config, activities);
    synchronize(device);
    profiler::enableProfiler(config, activities);
  } catch (const c10::Error&) {
    throw no_kineto();
  }
  for (int i = 0; i < steps; ++i) work();
  synchronize(device);
  try {
    profiler::disableProfiler()->save(path);
  } catch (const c10::Error&) {
    throw no_kineto();
  }
  std::cout << "wrote " << path << "\n";
}

int run(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help") {
    std::cout << "usage: device_profile FOLDER [steps=3]\n";
    return argc < 2 ? 2 : 0;
  }
  const std::string folder = argv[1];
  const int steps = int(bench::parse_arguments(argc - 1, argv + 1, {{"steps", 3, 1, 100}})[0]);
  std::filesystem::create_directories(folder);
  bench::setup_threads();
  const at::Device device = at::hasCUDA() ? at::Device(at::kCUDA) : at::Device(at::kCPU);
  std::cout << bench::machine_description() << "\nprofiling on " << device.str() << "\n";

  // Fitting steps as launched, and (on CUDA) replayed from a captured graph.
  for (bool capture : {false, true}) {
    if (capture && !device.is_cuda()) continue;
    at::manual_seed(0);
    const at::Tensor tracks =
        (at::randn({8, 1, 10 * kConsoleRate}) * 0.1).expand({8, 2, 10 * kConsoleRate});
    const at::Tensor mix = tracks.sum(0) * 0.5;
    FitOptions options;
    options.n_steps       = 100;
    options.adapt_threads = false;
    options.device        = device;
    options.capture_steps = capture;
    Fitter fitter(device_console(default_console_chain(), true), tracks.contiguous(), mix,
                  kConsoleRate, options);
    for (int i = 0; i < 3; ++i) fitter.step();  // warm-up (and the capture): plans, caches
    profile(folder + (capture ? "/fit_step_captured.json" : "/fit_step.json"), device, steps,
            [&] { fitter.step(); });
  }
  // Forward+backward renders of the paper's console and of device_bench's biquad EQ and
  // ballistics one.
  for (const auto& [file, chain] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"forward_backward", default_console_chain()},
           {"forward_backward_iir", bench::iir_console_chain()}}) {
    const Graph graph     = device_console(chain, false);
    Processors processors = make_processors(graph.types(), {kConsoleRate});
    RenderPlan plan       = make_render_plan(to_tensor(graph), ScheduleMethod::kOptimal);
    at::manual_seed(0);
    const at::Tensor x = (at::randn({8, 2, kConsoleCrop}) * 0.1).to(device);
    Parameters trained = create_parameters(graph, processors, {0, at::kFloat, false});
    for (auto& [type, named] : trained)
      for (const auto& [name, p] : named.named()) named[name] = p.to(device).requires_grad_(true);
    auto both = [&] {
      render(plan, processors, trained, x).outputs.pow(2).mean().backward();
      for (auto& [type, named] : trained)
        for (auto& [name, p] : named.named()) p.mutable_grad() = at::Tensor();
    };
    for (int i = 0; i < 3; ++i) both();
    profile(folder + "/" + file + ".json", device, steps, both);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return grafx::run_program("device_profile", [&] { return run(argc, argv); });
}
