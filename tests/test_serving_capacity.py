"""What one replica can carry within an objective (the audit asks this of the simulator)."""

from __future__ import annotations

import numpy as np
import pytest

from schedatrix.errors import InputError
from schedatrix.serving.studies.capacity import catalog_gpu, catalog_model, replica_capacity


@pytest.mark.parametrize("text, key", [
    ("Llama 3.1 70B", "llama-3.1-70b"), ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("Llama 3.2 3B", "llama-3.2-3b"), ("Llama-2-7b-hf", "llama-2-7b"),
    ("llama 2 70b chat", "llama-2-70b"), ("Mistral 7B", None), ("Llama 3.1", None),
    ("Mixtral 8x7B", "mixtral-8x7b"), ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),
    ("Qwen/Qwen3-30B-A3B", "qwen3-30b-a3b"), ("Qwen3 30B", None)])
def test_models_as_people_write_them(text, key):
    assert catalog_model(text) == key


@pytest.mark.parametrize("text, key", [
    ("8 x NVIDIA A100 80GB", "a100-80gb"), ("NVIDIA A100 40GB", None), ("H100 SXM", "h100-80gb"),
    ("h200", "h200"), ("NVIDIA L4", "l4"), ("MI300X", None)])
def test_gpus_as_people_write_them(text, key):
    assert catalog_gpu(text) == key


def _mix(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(200, 3000, n), rng.integers(20, 400, n)


def test_the_capacity_is_the_edge_of_the_objective():
    inp, out = _mix()
    c = replica_capacity("llama-3.2-3b", "a100-80gb", 1, inp, out, "ttft", 99, 1.0,
                         requests=1500)
    assert c.rate_rps > 1 and c.figure < 1.0
    failing = [rate for rate, _, ok in c.tried if not ok]
    assert failing and min(failing) <= c.rate_rps * 1.031 and min(failing) > c.rate_rps
    # a bigger model on the same GPU carries less
    big = replica_capacity("llama-3.1-8b", "a100-80gb", 1, inp, out, "ttft", 99, 1.0,
                           requests=1500)
    assert big.rate_rps < c.rate_rps


def test_a_replica_that_does_not_fit_says_so():
    inp, out = _mix(100)
    with pytest.raises(InputError, match="does not fit"):
        replica_capacity("llama-3.1-70b", "a100-80gb", 1, inp, out)


def test_the_table_shows_the_columns_asked_for():
    from schedatrix.errors import InputError
    from schedatrix.serving.cluster.deployment import Design
    from schedatrix.serving.load import Load, generate
    from schedatrix.serving.load.requests import SLOClass
    from schedatrix.serving.reports.report import ALL_COLUMNS, table
    from schedatrix.serving.studies.compare import compare, with_goodput

    chat = SLOClass("chat", 1.0, priority=0, ttft_s=1.0, tpot_s=0.1)
    load = Load(rate_rps=3.0, input_len="512", output_len="64", classes=[chat])
    c = compare([Design(), Design(replicas=2)], lambda s: generate(load, s, requests=200))
    head = table(c).splitlines()[0].split("  ")
    assert [h.strip() for h in head if h.strip()] == ["design", *ALL_COLUMNS]
    narrow = table(c, ("GPUs", "TTFT p95 ms", "in SLO", "verdict")).splitlines()
    assert narrow[0].split() == ["design", "GPUs", "TTFT", "p95", "ms", "in", "SLO", "verdict"]
    assert narrow[2].split()[:3] == ["1", "x", "TP1"] and narrow[2].split()[3] == "1"
    with_goodput(c, load, 0.9, requests=1000)
    cols = table(c, ("GPUs", "in SLO")).splitlines()[0]
    assert cols.index("max rps @90%") < cols.index("per GPU") < cols.index("in SLO")
    with pytest.raises(InputError, match="unknown 'p99'"):
        table(c, ("p99",))
    with pytest.raises(InputError, match="KV peak"):
        table(c, ("GPUs", "KV peak"))
