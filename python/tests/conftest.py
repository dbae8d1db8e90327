import os
import pathlib

import pytest
import torch

import grafx

SOURCE_DIR = pathlib.Path(os.environ.get("GRAFX_SOURCE_DIR", pathlib.Path(__file__).parents[2]))


@pytest.fixture(autouse=True)
def seeded_torch():
    """Every test draws the same numbers from torch's global generator, whatever ran before it,
    so a failure is reproduced by running its test alone."""
    torch.manual_seed(0)


@pytest.fixture
def chain_graph():
    """in -> eq -> compressor -> gain_pan -> out."""
    graph = grafx.Graph()
    first, last = graph.add_serial_chain(["eq", "compressor", "gain_pan"])
    source, out = graph.add("in", "vocals"), graph.add("out")
    graph.connect(source, first)
    graph.connect(last, out)
    return graph


@pytest.fixture
def cli():
    path = os.environ.get("GRAFX_BIN", str(SOURCE_DIR / "build" / "bin" / "grafx"))
    if not os.path.exists(path):
        pytest.skip("the grafx program is not built")
    return path


def small_console(chain="eg", n_tracks=3, n_groups=2, dry_wet=False):
    return grafx.mixing_console(n_tracks=n_tracks, n_groups=n_groups, chain=chain, dry_wet=dry_wet)


def float64_parameters(graph, processors, seed=0, scale=0.3):
    """Parameters away from the initial values (so derivatives are generic), float64 leaves."""
    parameters = grafx.create_parameters(graph, processors, seed=seed, dtype=torch.float64,
                                         requires_grad=False)
    generator = torch.Generator().manual_seed(seed)
    return {t: {n: (v + scale * torch.randn(v.shape, generator=generator, dtype=v.dtype))
                .requires_grad_() for n, v in group.items()}
            for t, group in parameters.items()}
