"""The synthetic shared-prefix load: documents asked about, their block hashes, the skew."""

from __future__ import annotations

import numpy as np
import pytest

from schedatrix.errors import InputError
from schedatrix.serving.cluster.deployment import Design
from schedatrix.serving.load.prefixes import HASH_BASE, shared_prefix_load
from schedatrix.serving.load.workload import Load, generate
from schedatrix.serving.sim.simulate import simulate


def test_each_request_is_its_document_plus_a_question():
    req = shared_prefix_load(500, 5.0, documents=40, document_tokens=1024, block_tokens=256,
                             seed=3)
    base = generate(Load(rate_rps=5.0, input_len="uniform:50-300", output_len="uniform:20-120"),
                    3, requests=500)
    assert np.array_equal(req.arrival_s, base.arrival_s)
    assert np.array_equal(req.input_tokens, base.input_tokens + 1024)
    assert np.array_equal(req.output_tokens, base.output_tokens)
    doc = req.meta["document"]
    for i in (0, 17, 499):
        assert req.hashes(i).tolist() == [HASH_BASE + doc[i] * 4 + b for b in range(4)]
    assert req.meta["hash_block_tokens"] == 256 and req.synthetic


def test_same_seed_same_load_and_popularity_skews_it():
    a = shared_prefix_load(2000, 5.0, documents=100, seed=1)
    b = shared_prefix_load(2000, 5.0, documents=100, seed=1)
    assert np.array_equal(a.hash_values, b.hash_values)
    skewed = shared_prefix_load(2000, 5.0, documents=100, popularity=1.5, seed=1)
    top = lambda r: np.bincount(r.meta["document"]).max() / len(r)  # noqa: E731
    assert top(a) < 0.05 and top(skewed) > 0.3


def test_the_prefix_cache_finds_the_documents():
    req = shared_prefix_load(300, 4.0, documents=5, seed=0)
    run = simulate(req, Design())
    # one replica, five documents: all but each document's first request find it cached
    assert run.prefix_hit_tokens >= (300 - 5) * 3072 * 0.95


@pytest.mark.parametrize("kw, message", [
    ({"document_tokens": 1000}, "multiple of block_tokens"),
    ({"documents": 0}, "documents must be from"),
    ({"popularity": -1.0}, "popularity must be in"),
])
def test_bad_knobs_are_refused_by_name(kw, message):
    with pytest.raises(InputError, match=message):
        shared_prefix_load(10, 1.0, **{"documents": 3, **kw})


def test_hashed_prompts_share_nothing_and_only_a_recompute_hits():
    """Each prompt's full blocks get hashes of its own: no request finds another's, so the
    prefix cache (on, as vLLM V1's is) hits only when a preempted request is recomputed."""
    from schedatrix.serving.load.prefixes import hashed_prompts
    base = generate(Load(rate_rps=16.0, input_len="lognormal:900,0.8",
                         output_len="lognormal:150,0.7"), 0, duration_s=60)
    req = hashed_prompts(base)
    assert np.array_equal(req.input_tokens, base.input_tokens)
    assert [len(req.hashes(i)) for i in range(5)] == (base.input_tokens[:5] // 16).tolist()
    assert len(np.unique(req.hash_values)) == len(req.hash_values)
    assert req.meta["hash_block_tokens"] == 16
    pair = Design(model="llama-3.1-8b", gpu="a100-80gb", replicas=2, max_batch=64)
    calm = simulate(hashed_prompts(generate(Load(rate_rps=2.0), 0, duration_s=60)), pair)
    assert calm.prefix_lookup_tokens > 0 and calm.prefix_hit_tokens == 0
    with pytest.raises(InputError, match="already carry prefix hashes"):
        hashed_prompts(req)
