// The demo's hidden console rendered forward and backward on the CPU and on CUDA, in float32 and
// float64: prints the largest relative differences of the outputs and of every parameter's
// gradient. Prints a note and exits 0 where LibTorch has no CUDA device.
//
//   build/bin/cuda_check            (on a machine with a GPU and a CUDA LibTorch)

#include <grafx/fit/demo.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/program.h>
#include <grafx/render/render.h>

#include "bench_support.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>

#include <iomanip>
#include <iostream>

using namespace grafx;

namespace {

struct Rendered {
  at::Tensor outputs;
  std::map<std::string, TensorDict> gradients;
};

Rendered render_on(const DemoSong& song, const Processors& processors, const RenderPlan& plan,
                   at::Device device, at::ScalarType dtype) {
  Parameters parameters;
  for (const auto& [type, named] : song.hidden)
    for (const auto& [name, value] : named)
      parameters[type][name] = value.detach().to(device, dtype).requires_grad_(true);
  at::Tensor tracks   = song.tracks.narrow(2, 0, 2 * song.sample_rate).to(device, dtype);
  RenderResult result = render(plan, processors, parameters, tracks);
  at::Tensor loss     = result.outputs.pow(2).mean();
  for (const auto& [type, named] : result.aux_losses)
    for (const auto& [name, value] : named) loss = loss + value.sum();
  loss.backward();
  Rendered r{result.outputs.detach().cpu(), {}};
  for (const auto& [type, named] : parameters)
    for (const auto& [name, value] : named) r.gradients[type][name] = value.grad().cpu();
  return r;
}

double relative_difference(const at::Tensor& a, const at::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item<double>();
}

int run(int argc, char** argv) {
  grafx::bench::parse_arguments(argc, argv, {});
  if (!at::hasCUDA()) {
    std::cout << "cuda_check: this LibTorch has no CUDA device; nothing to compare\n";
    return 0;
  }
  DemoSong song         = make_demo_song({});
  Processors processors = make_processors(song.console.types(), {song.sample_rate});
  // The hidden delays keep their initial poles near 0, whose soft impulse responses are nearly
  // flat: their argmax (the delay itself) is then decided by rounding and may differ between
  // devices. Compare at sharp poles: each delay's own canonical pole.
  for (const auto& spec : processors.at("delay")->parameter_specs())
    if (spec.name == "delay_z") {
      at::Tensor& z = song.hidden["delay"]["delay_z"];
      z             = spec.to_raw(spec.to_physical(z.to(at::kDouble))).to(z.scalar_type());
    }
  RenderPlan plan = make_render_plan(to_tensor(song.console), ScheduleMethod::kOptimal);
  std::cout << "| dtype | outputs | worst gradient | its parameter |\n|---|---|---|---|\n";
  bool ok = true;
  for (at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    Rendered cpu   = render_on(song, processors, plan, at::kCPU, dtype);
    Rendered cuda  = render_on(song, processors, plan, at::Device(at::kCUDA), dtype);
    double outputs = relative_difference(cuda.outputs, cpu.outputs), worst = 0;
    std::string worst_name;
    for (const auto& [type, named] : cpu.gradients)
      for (const auto& [name, gradient] : named) {
        double d = relative_difference(cuda.gradients[type][name], gradient);
        if (d > worst) worst = d, worst_name = type + "." + name;
      }
    std::cout << "| " << (dtype == at::kFloat ? "float32" : "float64") << " | "
              << std::setprecision(2) << outputs << " | " << worst << " | " << worst_name << " |\n";
    ok = ok && outputs < (dtype == at::kFloat ? 1e-5 : 1e-12);
  }
  return ok ? 0 : 1;
}

}  // namespace

// Errors end the program as they end the grafx CLI: one line with a code, status 1.
int main(int argc, char** argv) {
  return grafx::run_program("cuda_check", [&] { return run(argc, argv); });
}
