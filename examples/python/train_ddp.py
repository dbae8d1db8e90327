"""Trains a network through grafx on several processes with PyTorch's DistributedDataParallel.

    PYTHONPATH=build/python python3 examples/python/train_ddp.py [--ranks 2] [--threads 1]
        [--steps 100] [--batch 8] [--seed 0] [--output parameters.pt]

The task of train_gain_pan_predictor.py: a network predicts the gains and pans of a 4-track
gain/pan console from the tracks and their mix, the predicted settings are rendered through
grafx and the mix loss scores the render against the mix of hidden settings. Each step's batch
holds --batch songs, each drawn from --seed, the step and its index; each of the --ranks
processes (started with torch.multiprocessing.spawn, gloo on the CPU, --threads torch threads
each) draws and trains on its own contiguous shard of it, and DDP averages the gradients across
them before every update.

That is the update of one process training on the whole batch: the mix loss is the mean over
items of a per-item loss (docs/loss.md), so with equal shards the average of the shards' mean
gradients is the whole batch's mean gradient. (auraloss's MultiResolutionSTFTLoss pools the
batch in its spectral convergence, so it would not split this way.) --ranks 1 trains in this
process without DDP: the reference. --output writes the initial parameters, every rank's final
parameters and last gradients (flattened, one row per rank) and the network's state_dict, for
comparing the two.

The graph and processors are built inside each process; nothing of grafx crosses processes.
Rank 0 prints the step, the loss of the whole batch (the mean of the shards' losses) and the
speed.
"""

import argparse
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing

import grafx

SAMPLE_RATE, SECONDS, TRACKS = 16000, 1.0, 4


def options(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2, help="processes (1: no DDP)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch", type=int, default=8, help="songs per step, all ranks together")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--output", help="file for the final parameters (torch.save)")
    parsed = parser.parse_args(argv)
    if parsed.ranks < 1 or parsed.batch % parsed.ranks:
        parser.error(f"expected --batch divisible by --ranks, but got --batch {parsed.batch} "
                     f"and --ranks {parsed.ranks}")
    return parsed


def free_port():
    """A TCP port nothing listens on now (the OS picks it for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def random_songs(step, items, seed):
    """Songs `items` of the step's batch (a range): K×2×L noise bursts with a random colour and
    envelope per track, and hidden log gains K×2, stacked. Item i is drawn from its own seed, so
    a rank draws only its shard and gets the rows one process draws for the whole batch."""
    length = int(SAMPLE_RATE * SECONDS)
    tracks, hidden = [], []
    for item in items:
        generator = torch.Generator().manual_seed((seed * 1_000_003 + step) * 1_009 + item)
        noise = torch.randn(TRACKS, 1, length, generator=generator)
        colour = torch.rand(TRACKS, 1, 1, generator=generator) * 0.95
        coloured = noise.clone()
        coloured[..., 1:] += colour * noise[..., :-1]
        cycles = torch.randint(1, 8, (TRACKS, 1, 1), generator=generator)
        envelope = torch.sin(torch.linspace(0, 1, length) * torch.pi * cycles).abs()
        tracks.append((0.2 * coloured * envelope).expand(-1, 2, -1))
        hidden.append(torch.empty(TRACKS, 2).uniform_(-2, 0.5, generator=generator))
    return torch.stack(tracks), torch.stack(hidden)


def features(tracks, mix):
    """Per track: its level, the mix's level per channel, and its correlation with each."""
    level = tracks[:, :, 0].pow(2).mean(-1).add(1e-8).log()
    mix_level = mix.pow(2).mean(-1).add(1e-8).log()
    correlation = torch.einsum("bkl,bcl->bkc", tracks[:, :, 0], mix) / tracks.shape[-1]
    correlation = correlation / (tracks[:, :, 0].pow(2).mean(-1, keepdim=True).sqrt() *
                                 mix.pow(2).mean(-1).sqrt().unsqueeze(1) + 1e-8)
    return torch.cat([level.unsqueeze(-1), mix_level.unsqueeze(1).expand(-1, TRACKS, -1),
                      correlation], dim=-1)  # B × K × 5


def train(rank, arguments, port=None):
    """One process: rank `rank` of `arguments.ranks` (1: alone, no process group)."""
    torch.set_num_threads(arguments.threads)
    distributed = arguments.ranks > 1
    if distributed:
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
        dist.init_process_group("gloo", rank=rank, world_size=arguments.ranks)

    # Everything grafx is made here, in the process that uses it.
    console = grafx.mixing_console(n_tracks=TRACKS, chain=["gain_pan"])
    processors = grafx.make_processors(console, SAMPLE_RATE)
    plan = grafx.compute_render_plan(console)
    loss_function = grafx.MixLoss(sample_rate=SAMPLE_RATE, fft_sizes=(256, 512, 1024), n_mels=48)

    torch.manual_seed(arguments.seed)  # the same initial network on every rank
    network = torch.nn.Sequential(torch.nn.Linear(5, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                                  torch.nn.ReLU(), torch.nn.Linear(64, 2))
    model = torch.nn.parallel.DistributedDataParallel(network) if distributed else network
    optimizer = torch.optim.Adam(model.parameters(), lr=arguments.lr)
    initial = torch.nn.utils.parameters_to_vector(network.parameters()).detach().clone()
    shard = arguments.batch // arguments.ranks
    items = range(rank * shard, (rank + 1) * shard)  # this rank's rows of every batch

    communicated = []  # every tensor given to a collective here, kept to the end (see there)
    if distributed:
        dist.barrier()  # time the training, not the start of the processes
    start = time.perf_counter()
    for step in range(1, arguments.steps + 1):
        tracks, hidden = random_songs(step, items, arguments.seed)
        with torch.no_grad():
            target = grafx.render(plan, processors, {"gain_pan": {"log_gain": hidden}},
                                  tracks)[:, 0]  # shard × 2 × L
        predicted = model(features(tracks, target))  # shard × K × 2
        estimate = grafx.render(plan, processors, {"gain_pan": {"log_gain": predicted}},
                                tracks)[:, 0]
        loss = loss_function(estimate, target)  # the mean over the shard's items
        optimizer.zero_grad()
        loss.backward()  # DDP all-reduces (averages) the gradients here
        optimizer.step()
        if step == 1 or step % 10 == 0 or step == arguments.steps:
            whole = loss.detach().clone()
            if distributed:  # every rank reaches this step: a collective is safe
                dist.all_reduce(whole)
                communicated.append(whole)
                whole = whole / arguments.ranks
            if rank == 0:
                seconds = time.perf_counter() - start
                print(f"step {step:4d}/{arguments.steps}  mix loss {whole.item():.4f}  "
                      f"{step / seconds:.2f} steps/s  {step * arguments.batch / seconds:.1f} "
                      f"songs/s", flush=True)
    seconds = time.perf_counter() - start

    # Every rank's parameters and last (averaged) gradients, for comparing ranks and runs.
    final = gather(network.parameters(), arguments.ranks, communicated)
    gradients = gather((p.grad for p in network.parameters()), arguments.ranks, communicated)
    if rank == 0:
        print(f"{arguments.steps} steps of {arguments.batch} songs on {arguments.ranks} "
              f"process(es) x {arguments.threads} thread(s): {seconds:.2f} s, "
              f"{arguments.steps / seconds:.2f} steps/s", flush=True)
        if arguments.output:
            torch.save({"initial": initial, "parameters": final, "gradients": gradients,
                        "state_dict": network.state_dict(), "seconds": seconds},
                       arguments.output)
    if distributed:
        # PyTorch 1.13's gloo process group, when the DDP module frees it, joins its worker
        # threads while holding the GIL; a worker that is just freeing the last reference to a
        # tensor Python made needs the GIL for it: a deadlock at the end, now and then. So the
        # tensors of the collectives outlive the process group and the module.
        dist.destroy_process_group()
        del model
    del communicated


def gather(tensors, ranks, communicated):
    """The tensors flattened into one vector, from every rank: ranks × n (1 × n alone)."""
    flat = torch.nn.utils.parameters_to_vector([t.detach() for t in tensors])
    every_rank = [torch.empty_like(flat) for _ in range(ranks)]
    if ranks > 1:
        dist.all_gather(every_rank, flat)
        communicated += [flat, *every_rank]
    else:
        every_rank[0].copy_(flat)
    return torch.stack(every_rank)


def main(argv=None):
    arguments = options(argv)
    if arguments.ranks == 1:
        train(0, arguments)
    else:
        torch.multiprocessing.spawn(train, args=(arguments, free_port()), nprocs=arguments.ranks,
                                    join=True)


if __name__ == "__main__":
    main()
