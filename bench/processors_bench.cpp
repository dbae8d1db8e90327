// Forward and forward+backward time of every registered processor on 16 stereo signals of
// 2^17 samples at 30 kHz (float32), parameters at their initial values. The backward pass
// computes the gradients of the parameters and of the input (as inside a graph, where the input
// is an earlier node's output).

#include <grafx/processors/registry.h>
#include <grafx/program.h>

#include "bench_support.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <iostream>

namespace {

int run(int argc, char** argv) {
  grafx::bench::parse_arguments(argc, argv, {});
  using namespace grafx;
  using namespace grafx::bench;
  setup_threads();
  std::cout << machine_description() << "\n\n";
  constexpr int64_t kItems = 16, kLength = int64_t(1) << 17;
  constexpr SampleRate kRate = 30000;
  std::cout
      << "### Processors: 16×2×2^17 samples at 30 kHz (70 s of stereo audio per call), float32\n\n";
  Table table({"processor", "forward ms", "forward+backward ms", "audio seconds per second (f+b)"});
  for (const auto& info : processor_registry()) {
    auto processor = info.make({kRate});
    at::manual_seed(0);
    at::Tensor x = at::randn({kItems, 2, kLength}) * 0.1;
    TensorDict parameters;
    for (const auto& spec : processor->parameter_specs()) {
      std::vector<int64_t> shape{kItems};
      shape.insert(shape.end(), spec.shape.begin(), spec.shape.end());
      parameters[spec.name] =
          (spec.init_mean + spec.init_std * at::randn(shape)).requires_grad_(true);
    }
    at::Tensor x_leaf = x.clone().requires_grad_(true), weights = at::randn_like(x);
    // The same signal at every inlet (a sidechain keyed by its own input, a mid/side merge).
    const std::vector<at::Tensor> inputs(processor->inlets().size(), x),
        leaf_inputs(processor->inlets().size(), x_leaf);
    double forward       = time_it([&] {
                       c10::NoGradGuard no_grad;
                       processor->forward(inputs, parameters);
                     }).median_ms;
    double backward      = time_it([&] {
                        ProcessorOutput out = processor->forward(leaf_inputs, parameters);
                        at::Tensor loss     = x_leaf.sum() * 0;
                        for (const auto& y : out.outputs)  // mono outlets broadcast
                          loss = loss + (y * weights).sum();
                        for (const auto& [name, aux] : out.aux_losses) loss = loss + aux.sum();
                        loss.backward();
                      }).median_ms;
    double audio_seconds = kItems * kLength / kRate;
    table.add_row({info.name, fixed(forward, 1), fixed(backward, 1),
                   fixed(audio_seconds / (backward / 1000), 0)});
  }
  table.print(std::cout);
  return 0;
}

}  // namespace

// Errors end the program as they end the grafx CLI: one line with a code, status 1.
int main(int argc, char** argv) {
  return grafx::run_program("processors_bench", [&] { return run(argc, argv); });
}
