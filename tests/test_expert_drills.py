"""Lesson 13's drill kinds (schedatrix/course/drills/expert.py): their answers are the library's,
their prompts print what the answers are computed from, the same seed gives the same question."""

from __future__ import annotations

import random
import re

import pytest

from schedatrix.course.drills.expert import KINDS, expert_reads, fp8_weights
from schedatrix.serving.perf import PerfModel
from schedatrix.serving.perf.catalog import MODELS


def _draws(kind, n=60):
    return [kind(random.Random(seed)) for seed in range(n)]


def test_expert_reads_is_what_the_performance_model_reads():
    for q in _draws(expert_reads):
        name = next(m for m in ("mixtral-8x7b", "qwen3-30b-a3b") if q.prompt.startswith(m))
        n = int(re.search(r"runs (\d+) request", q.prompt).group(1))
        pm = PerfModel(name, "h200", tp=1 if name.startswith("qwen") else 2)
        m = MODELS[name]
        # the library's bytes read, less what is not a routed expert (its reads at n tokens
        # minus those at n tokens with no expert: the one-token read less its k experts)
        rest = pm.weight_bytes_read(1) - m.layers * m.experts_per_token * m.expert_params * 2
        assert q.answer == pytest.approx((pm.weight_bytes_read(n) - rest) / 1e9, rel=1e-9)
        assert q.grading == "figure" and q.unit == "GB" and q.rel_tolerance == 0.01


def test_fp8_weights_is_what_an_fp8_replica_holds():
    for q in _draws(fp8_weights):
        name = next(m for m in MODELS if q.prompt.startswith(m + " "))
        tp = int(re.search(r"TP(\d+) replica", q.prompt).group(1))
        gpu = re.search(r"replica on ([\w.-]+) hold", q.prompt).group(1)
        assert gpu in ("h100-80gb", "h200")             # FP8 tensor cores: not the A100
        pm = PerfModel(name, gpu, tp=tp, dtype="fp8")
        assert q.answer == pytest.approx(pm.weights_bytes_per_gpu / 1e9, rel=1e-9)
        # FP8 holds less than BF16, never less than half
        bf16 = PerfModel(name, "h200", tp=tp).weights_bytes_per_gpu / 1e9
        assert bf16 / 2 < q.answer < bf16


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_kind_is_drawn_from_its_seed_alone_and_keeps_its_answer_out_of_the_prompt(kind):
    make = KINDS[kind]
    qs = _draws(make, 40)
    assert [q.prompt for q in qs] == [q.prompt for q in _draws(make, 40)]
    assert len({q.prompt for q in qs}) > 5                 # the draws vary
    for q in qs:
        assert q.id == kind
        assert f"{q.answer:.2f}" not in q.prompt and f"{q.answer:.2f}" in q.explanation
