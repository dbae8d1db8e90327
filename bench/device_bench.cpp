// The paper's consoles on a GPU beside the CPU, in one run: forward and forward+backward of the
// full 8-track, 3-group console (`grafx console --tracks 8 --groups 3`: stereo 3.8 s at 30 kHz,
// the shape ../tools/grafx-py/bench_console.py and bench/grafx_python_device.py give GRAFX), of
// the same console built of biquad EQs and ballistics dynamics (the recursions' device
// kernels), and fitting steps of fit_bench's console (with dry/wet; Fitter::step on 3.8 s crops,
// loss, backward, AdamW; static, and with its levels automated). Each device's work ends with a
// synchronisation inside the timed span. Where LibTorch has no CUDA device, the CPU rows alone and
// a note.
//
//   build/bin/device_bench [repeats=10]

#include <grafx/dsp/recursion.h>
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

#include <c10/core/GradMode.h>

#include <chrono>
#include <iostream>

using namespace grafx;
using bench::device_console;
using bench::kConsoleCrop;
using bench::kConsoleRate;
using bench::synchronize;

namespace {

int run(int argc, char** argv) {
  const int repeats = int(bench::parse_arguments(argc, argv, {{"repeats", 10, 1, 1000}})[0]);
  bench::setup_threads();
  std::cout << "# Devices\n\n" << bench::machine_description() << "\n\n";
  std::vector<at::Device> devices = {at::kCPU};
  if (at::hasCUDA())
    devices.push_back(at::Device(at::kCUDA));
  else
    std::cout << "(this LibTorch has no CUDA device: CPU rows only)\n\n";
  std::cout << "8 tracks, 3 subgroups, stereo crops of 3.8 s at 30 kHz, float32; medians of "
            << repeats << " runs after a warm-up.\n\n";

  bench::Table table({"device", "console", "forward (ms)", "forward+backward (ms)"});
  for (const auto& [label, graph] : std::vector<std::pair<std::string, Graph>>{
           {"paper's chain e-c-n-s-g-d-r", device_console(default_console_chain(), false)},
           {"biquad EQ, ballistics dynamics", device_console(bench::iir_console_chain(), false)}}) {
    Processors processors = make_processors(graph.types(), {kConsoleRate});
    RenderPlan plan       = make_render_plan(to_tensor(graph), ScheduleMethod::kOptimal);
    at::manual_seed(0);
    const at::Tensor sources = at::randn({8, 2, kConsoleCrop}) * 0.1;
    for (at::Device device : devices) {
      Parameters fixed = create_parameters(graph, processors, {0, at::kFloat, false}), trained;
      for (auto& [type, named] : fixed)
        for (const auto& [name, p] : named.named()) {
          named[name]         = p.to(device);
          trained[type][name] = named[name].detach().clone().requires_grad_(true);
        }
      const at::Tensor x = sources.to(device);
      auto forward       = bench::time_it(
          [&] {
            render(plan, processors, fixed, x);
            synchronize(device);
          },
          repeats, 0);
      auto both = bench::time_it(
          [&] {
            render(plan, processors, trained, x).outputs.pow(2).mean().backward();
            for (auto& [type, named] : trained)
              for (auto& [name, p] : named.named()) p.mutable_grad() = at::Tensor();
            synchronize(device);
          },
          repeats, 0);
      table.add_row({device.str(), label, bench::fixed(forward.median_ms, 1),
                     bench::fixed(both.median_ms, 1)});
    }
  }
  table.print(std::cout);

  std::cout << "\nFitting steps (fit_bench's console with dry/wet, " << kConsoleCrop
            << "-sample crops of a 10 s song, loss on the last 2.8 s), ms per step over " << repeats
            << " steps after 3; on a GPU as launched and as a captured CUDA graph replayed:\n\n";
  bench::Table steps({"device", "steps", "step (ms)", "how"});
  const Graph fitted = device_console(default_console_chain(), true);
  at::manual_seed(0);
  const at::Tensor tracks =
      (at::randn({8, 1, 10 * kConsoleRate}) * 0.1).expand({8, 2, 10 * kConsoleRate});
  const at::Tensor mix = tracks.sum(0) * 0.5;
  // The last row's step is GRAFX's: the mix-matching loss and AdamW, without the regularisers.
  // The GPU first: after the CPU's steps its 16 threads may still spin while the GPU's launching
  // thread runs (a launched GPU step measured 36 and 57 ms in two calls that way).
  // The levels automated from the first step, as the second half of a `grafx fit` runs.
  struct StepKind {
    std::string how;
    bool capture, regularised, automated;
  };
  for (at::Device device : std::vector<at::Device>(devices.rbegin(), devices.rend()))
    for (const StepKind& kind :
         {StepKind{"launched", false, true, false}, StepKind{"captured", true, true, false},
          StepKind{"captured, loss alone", true, false, false},
          StepKind{"launched, levels automated", false, true, true},
          StepKind{"captured, levels automated", true, true, true}}) {
      if (kind.capture && device.is_cpu()) continue;
      FitOptions options;
      options.n_steps       = repeats + 3;
      options.adapt_threads = false;
      options.device        = device;
      options.capture_steps = kind.capture;
      if (!kind.regularised)
        for (auto& [name, weight] : options.regularizer_weights) weight = 0;
      if (kind.automated) {
        options.automation.parameters = {{"gain_pan", {}}};
        options.automation.start      = 0;
      }
      Fitter fitter(fitted, tracks.contiguous(), mix, kConsoleRate, options);
      std::string how;
      struct WarmedUp {};
      try {
        fitter.run([&](const FitProgress& p) {  // the first three: warm-up and capture
          how += p.note;
          if (p.step == 3) throw WarmedUp();
        });
      } catch (const WarmedUp&) {
      }
      synchronize(device);
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < repeats; ++i) fitter.step();
      synchronize(device);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      steps.add_row(
          {device.str(), kind.how, bench::fixed(ms / repeats, 1), how.empty() ? "-" : how});
    }
  steps.print(std::cout);

  // Exact ballistics (the compressor's and gate's attack and release) at scale: forward and
  // backward of 1024 rows of 2^18 samples, as issue 63 sizes it, in G samples per second.
  std::cout
      << "\nBallistics forward+backward, 1024 × 2^18 float32 samples (exact; G samples/s):\n\n";
  bench::Table ballistics({"device", "forward (ms)", "forward+backward (ms)", "G samples/s (f+b)",
                           "iterations (most of any row)"});
  for (at::Device device : devices) {
    const int64_t rows = device.is_cpu() ? 64 : 1024, length = int64_t(1) << 18;
    const auto o = at::TensorOptions().device(device);
    at::Tensor level =
        (at::randn({rows, length}, o).abs() * at::sin(at::arange(length, o) * 1e-4).abs().pow(3))
            .contiguous();
    at::Tensor attack  = at::rand({rows}, o) * 0.5 + 0.4;
    at::Tensor release = (1 - at::rand({rows}, o) * 1e-3).requires_grad_(true);
    at::Tensor start   = at::zeros({rows}, o);
    at::Tensor x       = level.requires_grad_(true);
    auto forward       = bench::time_it(
        [&] {
          c10::NoGradGuard no_grad;
          dsp::ballistics(x, attack, release, start);
          synchronize(device);
        },
        repeats, 0);
    auto both = bench::time_it(
        [&] {
          dsp::ballistics(x, attack, release, start).sum().backward();
          x.mutable_grad() = at::Tensor(), release.mutable_grad() = at::Tensor();
          synchronize(device);
        },
        repeats, 0);
    ballistics.add_row(
        {device.str() + (device.is_cpu() ? " (64 rows)" : ""), bench::fixed(forward.median_ms, 2),
         bench::fixed(both.median_ms, 2),
         bench::fixed(double(rows * length) / (both.median_ms * 1e6), 1),
         device.is_cuda() ? std::to_string(dsp::last_ballistics_iterations()) : "(sequential)"});
  }
  ballistics.print(std::cout);
  return 0;
}

}  // namespace

// Errors end the program as they end the grafx CLI: one line with a code, status 1.
int main(int argc, char** argv) {
  return grafx::run_program("device_bench", [&] { return run(argc, argv); });
}
