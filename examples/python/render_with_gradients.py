"""Render a mixing console from Python and read the gradients of a loss in physical units.

    PYTHONPATH=build/python python3 examples/python/render_with_gradients.py

Builds a 4-track console with two subgroups, mixes the tracks of the embedded demo song through
it, scores the mix against the demo's own (hidden-console) mix with the pruning paper's loss,
and prints which parameters the loss is most sensitive to. Writes console.svg.
"""

import torch

import grafx

song = grafx.demo_song(sample_rate=24000, seconds=4.0)
console = grafx.mixing_console(n_tracks=4, n_groups=2, chain="ecgr",
                               track_names=song["track_names"])
processors = grafx.make_processors(console, song["sample_rate"])
plan = grafx.compute_render_plan(console)
print(f"{console.num_nodes} nodes rendered in {plan.num_calls} batched processor calls "
      f"({plan.method}, proven optimal: {plan.proven_optimal})")

parameters = grafx.create_parameters(console, processors, seed=0)
mix = grafx.render(plan, processors, parameters, song["tracks"])[0]
loss = grafx.MixLoss(sample_rate=song["sample_rate"], skip_samples=song["sample_rate"] // 2)
value = loss(mix, song["mix"])
value.backward()
print(f"mix loss against the demo's mix: {value.item():.4f}")

print("largest gradients (raw parameters), with the node's value in physical units:")
physical = grafx.to_physical(console, processors, parameters)
rows = []
for type_name, group in parameters.items():
    for name, tensor in group.items():
        norms = tensor.grad.reshape(tensor.shape[0], -1).norm(dim=1)
        for row, norm in enumerate(norms.tolist()):
            rows.append((norm, type_name, name, row))
for norm, type_name, name, row in sorted(rows, reverse=True)[:6]:
    node = console.nodes_of_type(type_name)[row]
    spec = next(s for s in processors[type_name].parameter_specs() if s["name"] == name)
    value = physical[type_name][spec["physical_name"]][row]
    shown = f"{value.item():.3g}" if value.numel() == 1 else f"mean {value.mean().item():.3g}"
    print(f"  |grad| {norm:8.4f}  {console.node(node)['name']:>14}  {name:<14} "
          f"{spec['physical_name']} = {shown} {spec['unit']}")

console.draw("console.svg", strips=True, overwrite=True)
print("picture: console.svg")
