"""The planner's combination search (branch and bound) against the exhaustive search it
replaced, kept here as the oracle, on random pools; and 50 models in seconds."""

import time
from itertools import product

import numpy as np
import pytest

from schedatrix.serving.cluster.deployment import Design
from schedatrix.serving.studies.plan import (
    Option,
    Pool,
    _cheapest,
    _fits,
    _pareto,
    _smallest_budget,
    packs,
)

_SHAPES = [("llama-3.2-3b", 1), ("llama-3.2-3b", 2), ("llama-3.1-8b", 1), ("llama-3.1-8b", 2),
           ("llama-3.1-8b", 4), ("llama-3.1-70b", 4), ("llama-3.1-70b", 8)]


def _option(name: str, model: str, gpu: str, tp: int, n: int) -> Option:
    unit = Design(model=model, gpu=gpu, tp=tp, replicas=1)
    return Option(name, unit, 1.0, n, unit.with_(replicas=n), 0.95)


def _random_pool(rng, models: int, kinds: tuple[str, ...]) -> list[list[Option]]:
    per_model = []
    for k in range(models):
        opts = []
        for _ in range(int(rng.integers(1, 5))):
            model, tp = _SHAPES[int(rng.integers(len(_SHAPES)))]
            gpu = kinds[int(rng.integers(len(kinds)))]
            opts.append(_option(f"m{k}", model, gpu, tp, int(rng.integers(1, 4))))
        per_model.append(_pareto(opts))
    return per_model


# -- the exhaustive search the planner used before: the oracle -----------------------------------
def _cheapest_exhaustive(per_model, counts):
    best, best_key = None, None
    for combo in product(*per_model):
        key = (sum(o.dollars_per_hour for o in combo), sum(o.gpus for o in combo))
        if best_key is not None and key >= best_key:
            continue
        if counts is None or _fits(combo, counts):
            best, best_key = combo, key
    return best


def _smallest_budget_exhaustive(per_model, pool):
    best = None
    for combo in product(*per_model):
        need = {}
        for o in combo:
            for k, n in o.gpus_by_kind.items():
                need[k] = need.get(k, 0) + n
        for k in need:
            sizes = [s for o in combo for s in o.replica_sizes().get(k, [])]
            while not packs(sizes, need[k]):
                need[k] += 1
        key = (sum(need.values()), sum(o.dollars_per_hour for o in combo))
        if best is None or key < best[0]:
            best = (key, need)
    if best is None:
        return None
    return {k: best[1].get(k, 0) for k, _ in pool.kinds if best[1].get(k)}


@pytest.mark.parametrize("seed", range(60))
def test_branch_and_bound_finds_what_trying_every_combination_finds(seed):
    rng = np.random.default_rng(seed)
    kinds = ("h100-80gb",) if seed % 2 else ("h100-80gb", "a100-80gb")
    per_model = _random_pool(rng, int(rng.integers(1, 6)), kinds)
    counts = {k: int(rng.integers(1, 40)) for k in kinds}
    pool = Pool(tuple(counts.items()))
    assert _cheapest(per_model, counts) == _cheapest_exhaustive(per_model, counts)
    assert _cheapest(per_model, None) == _cheapest_exhaustive(per_model, None)
    assert _smallest_budget(per_model, pool) == _smallest_budget_exhaustive(per_model, pool)


@pytest.mark.parametrize("seed, slack", [(8, 0), (8, -4), (9, 10)])
def test_fifty_models_are_placed_in_seconds(seed, slack):
    """50 models of up to four options each (4^50 combinations): a pool as large as their
    cheapest options need, or a little tighter (the search must trade, or prove none fits)."""
    rng = np.random.default_rng(seed)
    per_model = _random_pool(rng, 50, ("h100-80gb", "a100-80gb"))
    cheapest = [min(opts, key=lambda o: o.dollars_per_hour) for opts in per_model]
    counts = {k: max(1, sum(o.gpus_by_kind.get(k, 0) for o in cheapest) + slack)
              for k in ("h100-80gb", "a100-80gb")}
    start = time.process_time()
    combo = _cheapest(per_model, counts)
    budget = _smallest_budget(per_model, Pool(tuple(counts.items())))
    took = time.process_time() - start
    assert took < 10, took
    assert budget and sum(budget.values()) >= sum(min(o.gpus for o in opts)
                                                  for opts in per_model)
    if slack >= 0:
        assert combo is not None and len(combo) == 50 and _fits(combo, counts)
        assert sum(o.dollars_per_hour for o in combo) >= sum(o.dollars_per_hour
                                                             for o in cheapest) - 1e-9
