// Build a graph, render it, and take gradients: the README's library example, complete.
//
//   build/bin/example_render_graph

#include <grafx/graph/graph_tensor.h>
#include <grafx/processors/registry.h>
#include <grafx/render/parameters.h>
#include <grafx/render/render.h>

#include <ATen/ATen.h>

#include <iostream>

using namespace grafx;

int main() {
  Graph g(registry_node_types());
  NodeId in          = g.add("in", "vocals");
  auto [first, last] = g.add_serial_chain({"eq", "compressor", "reverb"});
  NodeId out         = g.add("out");
  g.connect(in, first);
  g.connect(last, out);

  RenderPlan plan       = make_render_plan(to_tensor(g), ScheduleMethod::kOptimal);
  Processors processors = make_processors(g.types(), {/*sample_rate=*/44100});
  Parameters parameters = create_parameters(g, processors);  // raw, requires_grad
  at::Tensor sources    = at::randn({1, 2, 44100}) * 0.1;    // one second of stereo noise

  at::Tensor y = render(plan, processors, parameters, sources).outputs;  // 1×2×44100
  y.pow(2).mean().backward();                                            // any loss

  std::cout << plan.to_string() << "output " << y.sizes() << ", gradient norms:\n";
  for (const auto& [type, named] : parameters)
    for (const auto& [name, p] : named)
      std::cout << "  " << type << "." << name << ": " << p.grad().norm().item<double>() << "\n";
  return 0;
}
