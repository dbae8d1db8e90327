"""grafx from Python on a CUDA device: a render with gradients and fitting steps of a small
console, each checked against the same work on the CPU. Run where torch sees a GPU, with the
module of `pip install --no-build-isolation .` (scripts/device-check.sh, RUNS=pip).

    python3 bench/python_cuda_smoke.py
"""

import sys

import torch

import grafx


def main():
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to check")
        return 0
    torch.manual_seed(0)
    graph = grafx.mixing_console(n_tracks=4, n_groups=2)
    plan = grafx.compute_render_plan(graph)
    ok = True

    # A render and its gradients on both devices, from the same parameters.
    sources = torch.randn(4, 2, 30000) * 0.1
    results = {}
    for device in ("cpu", "cuda"):
        processors = grafx.make_processors(graph, 30000, device=device)
        parameters = grafx.create_parameters(graph, processors, seed=1)
        output = grafx.render(plan, processors, parameters, sources.to(device))
        output.pow(2).mean().backward()
        gradient = parameters["eq"]["log_magnitude"].grad
        results[device] = (output.detach().cpu(), gradient.cpu())
    difference = (results["cpu"][0] - results["cuda"][0]).abs().max().item()
    scale = results["cpu"][0].abs().max().item()
    gradient_difference = ((results["cpu"][1] - results["cuda"][1]).norm() /
                           results["cpu"][1].norm()).item()
    print(f"render on cuda: output {difference / scale:.2e} of the peak from the CPU's, "
          f"eq gradient {gradient_difference:.2e} relative")
    ok = ok and difference <= 1e-4 * scale and gradient_difference <= 1e-3

    # Fitting steps on CUDA (captured after the first two) beside the CPU's, from one start.
    song = grafx.demo_song(seconds=8)
    notes, losses = [], {}
    for device in ("cpu", "cuda"):
        fitter = grafx.Fitter(song["console"], song["tracks"], song["mix"], song["sample_rate"],
                              num_steps=4, device=device)
        fitter.run(lambda p: notes.append(p["note"]) if p["note"] else None)
        losses[device] = [r["match_loss"] for r in fitter.history]
    first = abs(losses["cpu"][0] - losses["cuda"][0]) / abs(losses["cpu"][0])
    print(f"fit steps on cuda: {losses['cuda']}, first step {first:.2e} from the CPU's; "
          f"notes: {notes}")
    ok = ok and first <= 1e-3
    print("python on cuda:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
