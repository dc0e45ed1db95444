"""The serving model against published measurements of real deployments
(docs/serving-validation.md), and the terms issue 22 added: the host's time per iteration, CUDA
graphs, the collectives' floors, each phase of a split its own parallelism and GPU, and
DistServe's goodput."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import run_in_process

from schedatrix.errors import InputError
from schedatrix.serving.cluster.deployment import Design, build
from schedatrix.serving.load.requests import SLOClass
from schedatrix.serving.load.workload import Load
from schedatrix.serving.perf.host import VLLM_HOST
from schedatrix.serving.perf.model import CUDA_GRAPH_MAX_TOKENS, PerfModel
from schedatrix.serving.published.lora_rows import LORA_PUBLISHED
from schedatrix.serving.published.rows import PUBLISHED, UNREPLAYED
from schedatrix.serving.published.spec_rows import SPEC_PUBLISHED, SPEC_UNREPLAYED, SpecPublished
from schedatrix.serving.studies.capacity import goodput_capacity
from schedatrix.serving.validation.replay import (
    KINDS,
    LEAN_LIMIT,
    SHARE_AIM,
    calibrating,
    check,
    validate,
)

ROOT = Path(__file__).resolve().parents[1]
TESTED = [r for r in PUBLISHED + SPEC_PUBLISHED + LORA_PUBLISHED if not r.fitted]
TRT_PAGE = "https://github.com/NVIDIA/TensorRT-LLM/blob/v0.9.0/docs/source/performance.md"


# -- the table ------------------------------------------------------------------------------------
def test_the_table_has_ten_tested_rows_from_several_sources():
    assert len(TESTED) >= 10
    assert len({r.source for r in TESTED}) >= 3
    assert len({r.id for r in PUBLISHED}) == len(PUBLISHED)
    for r in PUBLISHED:
        assert r.source.startswith("https://"), r.id
        assert r.value > 0 and r.band in (0.15, 0.20, 0.25)
    assert all(why for _, _, why in UNREPLAYED)


def test_every_row_of_tensorrt_llm_0_9s_page_for_the_catalog_is_taken():
    # the page's tables for LLaMA 7B, LLaMA 70B and Mixtral 8x7B on H200, H100 (FP8) and A100
    # (FP16): 4 throughput rows and 2 first-token rows each, 54 in all, every one a setup of its own
    rows = [r for r in PUBLISHED if r.source.startswith(TRT_PAGE)]
    assert len(rows) == 54 and len({r.setup_key() for r in rows}) == 54
    for g in ("a100-80gb", "h100-80gb", "h200"):
        for m in ("llama-2-7b", "llama-2-70b", "mixtral-8x7b"):
            mine = [r for r in rows if (r.gpu, r.model) == (g, m)]
            assert sorted(r.kind for r in mine) == ["batch_throughput"] * 4 + ["first_token"] * 2
            assert {r.dtype for r in mine} == {"bf16" if g == "a100-80gb" else "fp8"}
    assert not any(r.fitted for r in rows)


def test_every_row_names_the_engine_that_measured_it():
    from schedatrix.serving.validation.replay import engine_flags

    for r in PUBLISHED:
        static, vllm_host = engine_flags(r)
        assert vllm_host == r.engine.startswith("vllm"), r.id
        assert static == (not vllm_host and not r.online), r.id   # a served load is not static
    # TensorRT-LLM 0.9's page: 0.9's static session; its quantization blog and NIM: the profile
    assert {r.engine for r in PUBLISHED if r.framework == "tensorrt-llm"} == \
        {"tensorrt-llm-0.9", "tensorrt-llm"}
    assert {r.engine for r in PUBLISHED if r.source.startswith(TRT_PAGE)} == {"tensorrt-llm-0.9"}


# -- speculative decoding: the rows' acceptance and the draft-model method ----------------------
def test_every_speculating_row_carries_the_acceptance_its_run_measured():
    # no row's acceptance is fitted: each speculating row brings the mean acceptance length of
    # its own run, within what K drafted tokens allow; a draft row names a catalog draft
    from schedatrix.serving.perf.catalog import MODELS

    spec = [r for r in SPEC_PUBLISHED if r.spec_method != "none"]
    assert len(spec) >= 12
    for r in spec:
        assert 1.0 < r.accept_length <= r.spec_tokens + 1, r.id
        assert (r.draft_model in MODELS) == (r.spec_method == "draft"), r.id


def _draft_row(draft: str) -> SpecPublished:
    """A draft-model row on a setup the catalog holds (Llama 3.1 70B on 4 x H100, K = 5,
    acceptance length 3), made here to test the replay's path: no published figure, in no
    table."""
    return SpecPublished(f"draft-path-{draft}", "tests/test_serving_validation.py", "vllm",
                         "llama-3.1-70b", "h100-80gb", 4, "spec_itl", 1, 128, 256, 10.0, "ms",
                         "made in the test", spec_method="draft", spec_tokens=5,
                         accept_length=3.0, draft_model=draft)


def test_a_draft_row_replays_its_draft_models_passes():
    from schedatrix.serving.perf.spec_decode import SpecPerfModel
    from schedatrix.serving.validation.spec import design_of, replay_spec

    row = _draft_row("llama-3.2-3b")
    small, large = replay_spec(row), replay_spec(_draft_row("llama-3.1-8b"))
    # the mean TPOT is the speculating step (the target verifying K + 1 tokens, the draft's K
    # passes) over the 3 tokens a step yields, at the request's middle context
    perf = SpecPerfModel(PerfModel(row.model, row.gpu, tp=row.tp, host=VLLM_HOST),
                         design_of(row).spec())
    middle = row.input_tokens + row.output_tokens // 2 + 1
    assert small == pytest.approx(perf.iteration_s((), 1, middle) / 3.0 * 1e3, rel=0.05)
    # at the same acceptance an 8B draft's passes make each step longer than a 3B draft's
    assert large > 1.05 * small
    # a draft row without its draft model is refused in one line
    with pytest.raises(InputError, match="draft_model"):
        replay_spec(_draft_row(""))


def test_the_draft_model_sources_checked_are_listed_with_what_they_lack():
    page = (ROOT / "docs" / "serving-validation.md").read_text()
    assert len(SPEC_UNREPLAYED) >= 10
    for what, where, why in SPEC_UNREPLAYED:
        assert where.startswith("https://") and why, what
        assert f"| {what} | {where} | {why} |" in page, what
    # vLLM V1's draft-model PR among them
    assert any(where == "https://github.com/vllm-project/vllm/pull/24322"
               for _, where, _ in SPEC_UNREPLAYED)


@pytest.fixture(scope="module")
def checks():
    """Every row replayed once, for the tests below."""
    return {c.row.id: c for c in validate()}


def test_fitted_rows_are_out_and_one_setup_counts_once(checks):
    from schedatrix.serving.validation.replay import tests

    found = tests(list(checks.values()))
    assert not any(c.row.fitted for t in found for c in t.checks)
    assert sum(len(t.checks) for t in found) == len(TESTED)
    # vLLM's CI and PR #10058 both ran the 8B model on one H100, batch 8, 32 in / 128 out: one test
    twice = [t for t in found if len(t.checks) > 1]
    assert {c.row.id for t in twice for c in t.checks} == \
        {"vllm-ci-h100-8b-bs8", "vllm-pr10058-v1-graphs"}
    t = twice[0]
    assert t.error == pytest.approx(np.mean([c.ratio - 1 for c in t.checks]))


def _report(summaries) -> str:
    lines = [f"{'kind':12} {'tests':>5} {'in band':>8} {'mean signed error':>18}  worst"]
    for k in summaries:
        if k.n:
            lines.append(f"{k.kind:12} {k.n:5d} {k.in_band:8.0%} {k.mean_error:+18.1%}  "
                         f"{k.worst.row.id} ({k.worst.error:+.0%})")
        else:
            lines.append(f"{k.kind:12} {0:5d} {'-':>8} {'-':>18}  (no row)")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def summaries(checks):
    from schedatrix.serving.validation.replay import summarize

    found = summarize(list(checks.values()))
    print("\n" + _report(found))          # the per-kind report (pytest -s shows it)
    return {k.kind: k for k in found}


#: Kinds that lean today, each with its measured lean and what is known of its cause (issue 32,
#: open): strict, so the day a kind stops leaning this test fails until the entry goes.
KNOWN_LEANS = {
    "online TTFT": "+227% over 40 tests, 38% in band; NIM's 39 +233%, 36% in band (3 "
                   "requests a user, all counted, as NIM's sweep reads AIPerf; vLLM's post's "
                   "served load, in band, is the 40th): the users start together, as AIPerf's "
                   "concurrency mode "
                   "sends them, and the deterministic closed loop keeps them in lockstep, so each "
                   "TTFT waits for a wave's whole prefill; 18 published means lie below the "
                   "least a wave of all the users allows (validation/lockstep_floor), so the "
                   "measured runs were not in lockstep, but no source says what spread them. "
                   "Spread evenly over one request's time (online_start_study) the mean is +2% "
                   "with 46% in band, at random phases +8% with 49%: below the knee the rows "
                   "then run 20-60% fast, at it 2-3.5x slow (the loop keeps its collisions)",
    "first token from the CPU tier": "-12% over 6 tests, all in band: the model's copy back (the "
                                     "tier's bytes over the H100's 50 GB/s; the post's own copy "
                                     "benchmark reads 48.2 GB/s at this model's 2 MB blocks) and "
                                     "the last block's step come 10-13% before the published "
                                     "first tokens; the published points rise at 43.1 GB/s "
                                     "(a line through them, 7 ms at none), so the copy in use "
                                     "runs slower than either rate, for a cause no source "
                                     "names; the plot is read to about 10 ms, 3-6% of these "
                                     "points",
    "LoRA throughput": "+17% over 5 tests, 2 in band: vLLM 0.10's profile, replayed for "
                       "S-LoRA's engine, has room at 10 req/s, so with 1 to 50 adapters its "
                       "ratio stays near 1; saturated, one adapter costs the model 3% against "
                       "S-LoRA's 20% (test_s_loras_rows_miss_on_the_cost_of_serving_adapters_"
                       "at_all)",
}


@pytest.mark.parametrize("kind", [
    pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=KNOWN_LEANS[k]))
    if k in KNOWN_LEANS else k for k in KINDS], ids=lambda k: k.replace(" ", "_"))
def test_no_kind_leans_one_way(kind, summaries):
    """A kind whose rows are all in band still fails when its errors lean one way on average
    by more than 10% (model / published - 1, the tests of one setup counted once)."""
    k = summaries[kind]
    if k.n == 0:
        pytest.skip(f"no {kind} row")
    assert not k.leans, (f"{kind}: mean signed error {k.mean_error:+.1%} over {k.n} tests "
                         f"(limit ±{LEAN_LIMIT:.0%}); {k.in_band:.0%} in band; worst "
                         f"{k.worst.row.id} {k.worst.error:+.0%}\n" +
                         _report(summaries.values()))


@pytest.mark.xfail(strict=True, reason="74% of the 181 tests in band today: NIM's online TTFT "
                   "rows (KNOWN_LEANS) hold 25 of the 47 misses, S-LoRA's rows 3 (issue 32, "
                   "open)")
def test_nine_in_ten_of_all_tests_are_in_band(summaries):
    every = [t for k in summaries.values() for t in k.tests]
    share = sum(t.within for t in every) / len(every)
    out = sorted((t for t in every if not t.within), key=lambda t: -abs(t.error))
    assert share >= SHARE_AIM, (
        f"{share:.0%} of {len(every)} tests in band (aim {SHARE_AIM:.0%}); out of band: " +
        ", ".join(f"{t.row.id} {t.error:+.0%}" for t in out) + "\n" +
        _report(summaries.values()))


def test_there_are_at_least_eight_online_rows(summaries):
    online = summaries["online TTFT"].n + summaries["online ITL"].n
    assert online >= 8, f"{online} online rows (TTFT and ITL under a rate or a concurrency)"


def test_a_lean_fails_even_with_every_row_in_band(checks):
    from schedatrix.serving.validation.replay import Check, summarize

    # every throughput row moved to 15% above its published figure: all in band, leaning +15%
    moved = [Check(c.row, c.row.value * 1.15) for c in checks.values()
             if c.row.kind == "batch_throughput" and not c.row.fitted]
    k = next(s for s in summarize(moved) if s.kind == "throughput")
    assert k.in_band == 1.0 and k.leans
    balanced = [Check(c.row, c.row.value * (1.15 if i % 2 else 0.85))
                for i, c in enumerate(moved)]
    assert not next(s for s in summarize(balanced) if s.kind == "throughput").leans


def test_fp8_and_moe_rows_are_tested_from_their_own_sources(checks):
    fp8 = [r for r in TESTED if r.dtype == "fp8" or r.kind == "fp8_speedup"]
    moe = [r for r in TESTED if r.model in ("mixtral-8x7b", "qwen3-30b-a3b")]
    assert len(fp8) >= 8 and len({r.source for r in fp8}) >= 3
    assert {r.gpu for r in fp8} == {"h100-80gb", "h200"}
    assert len(moe) >= 3 and {r.dtype for r in moe} == {"bf16", "fp8"}
    # no FP8 factor is fitted: every FP8 row is a test of the bytes and the FP8 peak
    assert not any(r.calibrates for r in PUBLISHED if r.dtype == "fp8")
    speedups = [checks[r.id] for r in TESTED if r.kind == "fp8_speedup"]
    assert speedups and all(c.model > 1.2 for c in speedups)


def test_the_lockstep_start_is_most_of_the_online_ttft_lean():
    # the same rows replayed with the users' first sends spread over one request's time alone,
    # evenly or at random phases: the lean shrinks from about +233% to +2% and +8%, but neither
    # fits: the rows below the knee then run 20-60% fast, the four at the knee 2-3.5x slow
    from schedatrix.serving.validation.replay import STARTS, online_start_study

    study = online_start_study()
    assert tuple(study) == STARTS == ("together", "even", "random")
    together, even, random = study.values()
    assert together.n == even.n == random.n == 39
    # the figures KNOWN_LEANS and docs/serving-validation.md give
    assert together.mean_error == pytest.approx(2.33, abs=0.01)
    assert round(together.in_band * 39) == 14
    assert even.mean_error == pytest.approx(0.02, abs=0.01)
    assert round(even.in_band * 39) == 18      # not a fix: the published figure lies between
    assert random.mean_error == pytest.approx(0.08, abs=0.01)
    assert round(random.in_band * 39) == 19
    knee = {f"nim-h100-70b-fp8-tp2-{k}-ttft" for k in ("u50-5000-500", "u100-5000-500",
                                                       "u200-500-2000", "u250-1000-1000")}
    for spread, low, high in ((even, -0.61, -0.28), (random, -0.53, -0.20)):
        below_knee = [t.error for t in spread.tests if 25 <= t.row.users <= 150
                      and t.row.input_tokens in (200, 500, 1000)]
        assert len(below_knee) == 12
        assert low < min(below_knee) and max(below_knee) < high      # 29-60%, 20-53% fast
        slow = {t.row.id: t.error for t in spread.tests if t.error > 1.0}
        assert set(slow) == knee and max(slow.values()) < 2.5               # 2-3.5x slow


def test_a_deterministic_closed_loop_keeps_its_collisions():
    # why no start fits: requests whose prefills once met finish their fixed-length decodes
    # together and meet again, so the loop never relaxes to what random arrivals would wait
    from schedatrix.serving.validation.replay import online_run

    def waves(row_id, per_user, start):
        row = next(r for r in PUBLISHED if r.id == row_id)
        row = dataclasses.replace(row, requests=per_user * row.users)
        run = online_run(row, start=start)
        # request i is the i-th sent: a wave is the next ``users`` sends
        ttft = (run.first_token_s - run.arrival_s).reshape(per_user, row.users)
        return ttft.mean(axis=1), ttft

    lone = waves("nim-h100-70b-fp8-tp2-u1-5000-500-ttft", 1, "together")[0][0]
    assert lone == pytest.approx(0.389, abs=0.001)
    # 5 users sent together: the waves settle at 2.4 lone prompts from the 5th on (published:
    # a mean of 547 ms over 3 requests a user, 1.4 lone prompts)
    means, _ = waves("nim-h100-70b-fp8-tp2-u5-5000-500-ttft", 8, "together")
    assert np.allclose(means[4:], means[4], rtol=1e-9)
    assert round(means[4] / lone, 1) == 2.4 and means[4] > 0.547 * 1.6
    # 50 users at random phases: the mean stays at 1.8-2.0 s (4.7-5.2 lone prompts) wave after
    # wave, over twice the published 0.83 s
    means, _ = waves("nim-h100-70b-fp8-tp2-u50-5000-500-ttft", 8, "random")
    assert all(1.8 < m < 2.05 for m in means[1:]) and means[-1] > 2 * 0.8345


def test_the_start_is_not_why_the_rows_below_the_knee_run_fast():
    # out of the loop (validation/online_arrivals.py): each row's requests arriving at random at
    # the rate its loop settles at, on the same design; 11 of the 12 rows below the knee still
    # run 28-50% fast, 55-160 ms short of NIM's TTFT, while every online ITL row is in band
    from schedatrix.serving.validation.online_arrivals import open_loop_ttft

    rows = [r for r in PUBLISHED if r.kind == "online_ttft" and r.client == "aiperf"
            and 25 <= r.users <= 150 and r.input_tokens in (200, 500, 1000)]
    out = [open_loop_ttft(r) for r in rows]
    fast = [o for o in out if o.error < 0]
    assert len(fast) == 11
    assert -0.51 < min(o.error for o in fast) and max(o.error for o in fast) < -0.28
    from schedatrix.serving.reports.decision_record import MODEL_TTFT_CAVEAT  # says so
    low, high = (round(-100 * f(o.error for o in fast)) for f in (max, min))
    assert f"moderate load ran {low}-{high}% short" in MODEL_TTFT_CAVEAT
    short_ms = [o.row.value - o.ttft_s * 1e3 for o in fast]
    assert 50 < min(short_ms) and max(short_ms) < 165
    with pytest.raises(InputError, match="is not an online TTFT row"):
        open_loop_ttft(next(r for r in PUBLISHED if r.kind == "online_itl"))
    (queued,) = [o for o in out if o.error > 0]          # 150 users of 500 / 2,000 in
    assert queued.row.id == "nim-h100-70b-fp8-tp2-u150-500-2000-ttft" and queued.ttft_s > 2.0
    itl = [check(r) for r in PUBLISHED if r.kind == "online_itl" and r.client == "aiperf"]
    alone = [check(r) for r in PUBLISHED if r.kind == "online_ttft" and r.client == "aiperf"
             and r.users == 1]
    assert len(itl) == 39 and len(alone) == 5 and all(c.within for c in itl + alone)


def test_nims_rows_count_three_requests_a_user_every_one():
    # NIM's sweep: aiperf --request-count $((C * 3)), no warm-up, the average over them all
    from schedatrix.serving.validation.replay import online_run, replay

    nim = [r for r in PUBLISHED if r.online and r.client == "aiperf"]
    assert len(nim) == 78 and all(r.requests == 3 * r.users for r in nim)
    row = next(r for r in nim if r.id == "nim-h100-70b-fp8-tp2-u5-5000-500-ttft")
    run = online_run(row)
    ttft = (run.first_token_s - run.arrival_s) * 1e3
    assert len(ttft) == 15 and replay(row) == pytest.approx(ttft.mean())  # first wave counted
    assert np.allclose(run.arrival_s[:row.users], 0.0)      # AIPerf's burst: all at once


def test_vllms_post_is_replayed_with_its_spread_lengths_and_its_clients_statistics(checks):
    # vLLM's FP8 KV-cache post: 150 requests through 8 slots (bench serve's --max-concurrency,
    # every request sent at once), lengths within 15% of 20,000 / 2,000; median TTFT, median
    # of every pooled gap (bench serve's ITL), output tok/s; the one-request line at its ends
    from schedatrix.serving.figures.metrics import gap_quantiles
    from schedatrix.serving.validation.replay import _lengths, online_run, replay

    post = [r for r in PUBLISHED if r.id.startswith("vllm-post-")]
    assert sorted(r.kind for r in post) == ["inter_token"] * 2 + [
        "online_itl", "online_tok_s", "online_ttft"]
    assert all(r.engine == "vllm-0.14" and not r.fitted for r in post)
    for r in post:
        if r.kind == "inter_token":        # the post's fitted line, 6.44 ms + 4.37e-05 ms/token
            assert r.value == pytest.approx(6.44 + 4.37e-05 * r.input_tokens)
    ttft = next(r for r in post if r.kind == "online_ttft")
    inp = _lengths(ttft.input_tokens, ttft.spread, ttft.requests, 0)
    out = _lengths(ttft.output_tokens, ttft.spread, ttft.requests, 1)
    assert inp.min() >= 17_000 and inp.max() <= 23_000 and len(np.unique(inp)) > 100
    assert out.min() >= 1_700 and out.max() <= 2_300 and abs(out.mean() / 2_000 - 1) < 0.03
    assert np.array_equal(inp, _lengths(20_000, 0.15, 150, 0))          # the same draws
    assert np.array_equal(_lengths(500, 0.0, 3, 0), [500, 500, 500])
    run = online_run(ttft)
    sent = np.sort(run.arrival_s)
    assert np.allclose(sent[:8], 0.0) and sent[8] > 0.5          # 8 at once, then one by one
    assert replay(ttft) == pytest.approx(np.median(run.first_token_s - run.arrival_s) * 1e3)
    itl = next(r for r in post if r.kind == "online_itl")
    assert replay(itl) == pytest.approx(gap_quantiles(online_run(itl).gaps, (50,))[0] * 1e3)
    # the pooled median is not the per-request mean AIPerf reports: a different figure
    aiperf = replay(dataclasses.replace(itl, client="aiperf", statistic="mean"))
    assert abs(aiperf / replay(itl) - 1) > 0.005
    # bench serve's mean ITL: every gap of every request, each run of gaps written out
    first, step, count, weights = online_run(itl).gaps.arrays()
    every = np.repeat(np.concatenate([f + s * np.arange(c) for f, s, c in
                                      zip(first, step, count, strict=True)]),
                      np.repeat(weights.sum(axis=1), count))
    pooled = replay(dataclasses.replace(itl, statistic="mean"))
    assert pooled == pytest.approx(every.mean() * 1e3, rel=1e-9)
    tok = next(r for r in post if r.kind == "online_tok_s")
    assert replay(tok) == pytest.approx(out.sum() / (run.done_s.max() - run.arrival_s.min()))
    with pytest.raises(InputError, match="statistic 'p99'"):
        replay(dataclasses.replace(ttft, statistic="p99"))
    # spread lengths keep the users apart, unlike NIM's fixed ones: after the first 8, no
    # instant sends more than two (NIM's u50-500-2000 sends its 50 users in a few waves)
    _, together = np.unique(np.round(sent[8:], 6), return_counts=True)
    assert together.max() <= 2 and len(together) >= 0.95 * (len(sent) - 8)
    assert all(checks[r.id].within for r in post), [checks[r.id].ratio for r in post]


def test_the_offloading_posts_figure_is_replayed_through_the_cpu_tier(checks):
    # vLLM's offloading connector, Figure 1 (read off its pixels): the first token of a lone
    # prompt computed, and with its KV copied back from CPU memory; the replay serves the
    # prompt, pushes it out of HBM with other prompts, then serves it again
    from schedatrix.serving.published.offload_rows import FIGURE1_TTFT_MS
    from schedatrix.serving.validation.replay import cpu_tier_run

    rows = [r for r in PUBLISHED if r.id.startswith("vllm-offload-")]
    assert len(rows) == 10 + 6 + 2      # the copies read to within half their band: 50k to 100k
    assert {r.kind for r in rows} == {"first_token", "cpu_tier_ttft", "prefill_rate"}
    # Figure 2: 10,000 prompts of 512 tokens at once, without the connector and with it where
    # nothing is found; the model charges no store to host memory, so the two are one figure
    # (published 4% apart)
    plain, tier = (checks[f"vllm-offload-h100-8b-prefill-512{t}"] for t in ("", "-tier"))
    assert plain.model == tier.model and tier.row.value < plain.row.value
    assert plain.within and tier.within
    assert all(r.engine == "vllm-0.14" and not r.fitted for r in rows)
    row = next(r for r in rows if r.id == "vllm-offload-h100-8b-100k-cpu")
    run = cpu_tier_run(row)
    assert run.prefix_cpu_hit_tokens == 100_000 - 16      # all but its last block, from CPU
    assert run.prefix_hit_tokens == 0                      # nothing left in HBM
    ttft = (run.first_token_s - run.arrival_s) * 1e3
    computed = checks["vllm-offload-h100-8b-100k-compute"].model
    assert ttft[0] == pytest.approx(computed, rel=1e-9)   # the first time it is computed
    assert ttft[-1] < computed / 20                        # the copy is 22x faster (published)
    # a model of 4,096 tokens' context pushes the prompt out with prompts that fit it
    short = cpu_tier_run(dataclasses.replace(row, model="llama-2-7b", input_tokens=3_000))
    assert short.prefix_cpu_hit_tokens == 3_000 // 16 * 16 and short.prefix_hit_tokens == 0
    # what the tier saves, computed over copied: 14.7x at 50k to 21.9x at 100k published; the
    # model's is 18-26% more, both of its errors pointing that way (docs/serving-validation.md)
    over = []
    for tokens, gpu_ms, cpu_ms in FIGURE1_TTFT_MS:
        if cpu_ms is None:
            continue
        k = tokens // 1000
        model = checks[f"vllm-offload-h100-8b-{k}k-compute"].model / \
            checks[f"vllm-offload-h100-8b-{k}k-cpu"].model
        over.append(model / (gpu_ms / cpu_ms))
    assert len(over) == 6 and 1.15 < min(over) and max(over) < 1.3, over


def test_past_the_knee_the_queues_wait_is_within_a_quarter(checks):
    # 5,000 / 500 at 150-250 users, 20,000 / 2,000 at 50-250: the TTFT is the wait in the
    # queue, which grows with the requests sent (3 a user, as NIM's sweep sends them)
    past = [c for c in checks.values() if c.row.kind == "online_ttft" and (
        (c.row.input_tokens == 5000 and c.row.users >= 150) or
        (c.row.input_tokens == 20000 and c.row.users >= 50))]
    assert len(past) == 8 and all(c.row.value > 30_000 for c in past)
    assert all(0.04 < c.ratio - 1 < 0.26 for c in past), [c.ratio for c in past]


def test_the_replays_lockstep_holds_round_after_round(capsys):
    # u50-500-2000: the first wave's prompts take three 8,192-token steps; every long step
    # carries the running decodes, so the groups end about one decode step apart, come back
    # together and wait for the whole wave's prefill again
    from schedatrix.serving.validation.replay import online_run

    row = next(r for r in PUBLISHED if r.id == "nim-h100-70b-fp8-tp2-u50-500-2000-ttft")
    run = online_run(row)
    first = run.first_token_s[:row.users]
    assert len(np.unique(np.round(first, 3))) <= 4 and first.max() > 1.5   # ~3 prefill steps
    ends = run.done_s[:row.users]
    together = np.sum(ends - ends.min() < 0.05)            # 49 of 50 end within two steps,
    assert together >= row.users - 1 and first.max() - first.min() > 1.0  # started 1.2 s apart
    second = (run.first_token_s - run.arrival_s)[row.users:2 * row.users]
    assert second.mean() > 4 * row.value / 1e3                          # and wait again
    sys.path.insert(0, str(ROOT / "tools"))
    from trace_online_row import main

    assert main([row.id, "--first", "3"]) == 0
    out = capsys.readouterr().out
    assert "0.567" in out and "mean TTFT over all 150 requests" in out
    assert "mean TTFT of each wave (50 requests in the order sent)" in out
    assert np.array_equal(run.user[:row.users], np.arange(row.users))   # user u sends request u
    assert sorted(np.bincount(run.user)) == [3] * row.users               # 3 requests a user
    assert main([row.id, "--first", "1", "--start", "random", "--per-user", "2"]) == 0
    out = capsys.readouterr().out
    assert "100 requests" in out and "the row's figure" not in out   # not the row's replay
    assert main(["nope"]) == 2 and main([row.id, "--first", "0"]) == 2
    assert main([row.id, "--per-user", "0"]) == 2 and main([row.id, "--per-user", "101"]) == 2
    with pytest.raises(SystemExit):
        main([row.id, "--start", "sideways"])


def test_the_published_means_rule_out_a_lockstep_wave():
    # FLOPs at the FP8 peak alone: the least mean TTFT of a wave of all the users sent together
    # (and of AIPerf's mean over 3 requests a user with the first wave sent at once)
    from schedatrix.serving.perf.catalog import gpu, model
    from schedatrix.serving.published.rows import _NIM_REQUESTS_PER_USER
    from schedatrix.serving.validation.lockstep_floor import (
        below_floors,
        counted_floor_ms,
        prefill_floor_ms,
        wave_floor_ms,
    )

    rows = [r for r in PUBLISHED if r.kind == "online_ttft" and r.client == "aiperf"]   # NIM's
    one = next(r for r in rows if r.id == "nim-h100-70b-fp8-tp2-u25-5000-500-ttft")
    m, g = model("llama-3.1-70b"), gpu("h100-80gb")
    by_hand = 2 * (m.params - 2 * m.embedding_params) * 5000 / (2 * g.tflops_fp8 * 1e12) * 1e3
    assert prefill_floor_ms(one) == pytest.approx(by_hand)
    assert wave_floor_ms(one) == pytest.approx(13 * by_hand)
    assert counted_floor_ms(one, 3) == pytest.approx((13 + 2) * by_hand / 3)
    counted, waves = below_floors(rows, _NIM_REQUESTS_PER_USER)
    assert len(counted) == 9 and len(waves) == 18 and set(counted) <= set(waves)
    assert one in counted and all(r.users >= 25 for r in waves)
    # genai-perf, NIM's client before AIPerf, sends the burst too and by default counts
    # max(10, 2 x C) requests in one window: 2 a user from 5 users on; 12 means lie below that
    by_two, _ = below_floors(rows, 2)
    assert len(by_two) == 12 and set(counted) <= set(by_two) <= set(waves)
    # a true floor: every lone request and the replay's own first wave lie above it
    lone = [r for r in rows if r.users == 1]
    assert all(r.value > prefill_floor_ms(r) for r in lone)
    from schedatrix.serving.validation.replay import replay

    assert all(replay(r) > counted_floor_ms(r, 3) for r in counted)
    for bad in (0, 1.5, True, "3"):
        with pytest.raises(InputError, match="requests_per_user"):
            counted_floor_ms(one, bad)


def test_a_ramp_spreads_the_closed_loops_first_sends():
    from schedatrix.serving.load.requests import ClosedLoop, Requests
    from schedatrix.serving.sim.engine import simulate_fast

    n, users = 8, 4
    built = build(Design(model="llama-3.1-8b", gpu="h100-80gb", client_path="none"))
    runs = [simulate_fast(Requests(np.zeros(n), np.full(n, 100), np.full(n, 10),
                                   np.zeros(n, np.int16), closed_loop=ClosedLoop(users, ramp_s=r)),
                          built.perf, built.config, built.layout, built.design.policy())
            for r in (0.0, 2.0)]
    assert np.allclose(runs[0].arrival_s[:users], 0.0)
    assert np.allclose(runs[1].arrival_s[:users], [0.0, 0.5, 1.0, 1.5])
    for bad in (-1.0, float("inf"), "1", True):
        with pytest.raises(InputError, match="ramp_s"):
            ClosedLoop(users, ramp_s=bad)
    # random phases: each user's first send at ramp_s x its own uniform draw, by the seed
    sends = [ClosedLoop(users, ramp_s=2.0, ramp="random", seed=k).first_sends_s(users)
             for k in (0, 0, 1)]
    assert sends[0] == sends[1] != sends[2]
    assert all(0 <= x < 2.0 for x in sends[0]) and sends[0] != sorted(sends[0])
    assert sends[0] == [2.0 * u for u in np.random.default_rng(0).random(users)]
    random = simulate_fast(Requests(np.zeros(n), np.full(n, 100), np.full(n, 10),
                                    np.zeros(n, np.int16),
                                    closed_loop=ClosedLoop(users, ramp_s=2.0, ramp="random")),
                           built.perf, built.config, built.layout, built.design.policy())
    assert np.allclose(random.arrival_s[:users], sends[0])
    with pytest.raises(InputError, match="ramp 'poisson'; allowed: even, random"):
        ClosedLoop(users, ramp="poisson")
    for bad in (-1, 1.5, True):
        with pytest.raises(InputError, match="seed"):
            ClosedLoop(users, ramp="random", seed=bad)


def test_tensorrt_llm_09_runs_its_fp8_mixtral_experts_in_16_bit():
    # 0.9 had no FP8 mixture of experts (0.10.0's release notes add it): its profile keeps the
    # experts 16-bit; every other profile runs FP8 experts in FP8
    from schedatrix.serving.perf.engines import ENGINES

    assert [n for n, p in ENGINES.items() if not p.moe_fp8] == ["tensorrt-llm-0.9"]
    assert any("v0.10.0" in s for s in ENGINES["tensorrt-llm-0.9"].sources)
    d = Design(model="mixtral-8x7b", gpu="h200", tp=2, dtype="fp8")
    assert d.perf().moe_fp8_compute and not d.with_(engine="tensorrt-llm-0.9").perf() \
        .moe_fp8_compute
    t = [d.with_(engine=e).perf().iteration_s([(2048, 0)], 0, 0)
         for e in ("tensorrt-llm", "tensorrt-llm-0.9")]
    assert t[1] > 1.3 * t[0]               # 16-bit experts: twice the bytes, half the peak


def test_the_grouped_fp8_matmuls_follow_deepgemms_table():
    # DeepGEMM's FP8 table on an H800 (the H100 SXM's SMs and HBM), every row, against the
    # calibrated roofline run as the MoE model runs its experts: no constant fitted to it
    from schedatrix.serving.published.fp8_gemm import DEEPGEMM_H800, fp8_flops_share
    from schedatrix.serving.validation.replay import gemm_checks

    found = gemm_checks("h100-80gb")
    assert len(found) == len(DEEPGEMM_H800) == 28
    ratio = {row: model / row[-1] for row, model in found}
    grouped = [x for row, x in ratio.items() if row[0]]
    assert len(grouped) == 10 and 0.8 < min(grouped) and max(grouped) < 1.15
    assert 0.85 < np.median(list(ratio.values())) < 1.0
    small = [x for row, x in ratio.items() if row[0] == 0 and row[1] <= 128]
    assert max(small) < 1.0                 # the H100's blend: slow at the knee (64-128 rows)
    # FP8 GEMMs reach about 55% of the FP8 peak when compute bound; the model (the H200's sharp
    # roofline, the BF16 share of the FP8 peak) runs them 1.1-2.4x faster than measured
    assert fp8_flops_share() == pytest.approx(0.554, abs=0.001)
    h200 = [m / row[-1] for row, m in gemm_checks("h200") if row[1] >= 4096]
    assert len(h200) == 10 and min(h200) > 1.09


def test_the_band_can_fail(checks):
    # a model half as fast on an in-band row's setup leaves the band
    c = next(c for c in checks.values() if c.within and not c.row.fitted)
    twice = type(c)(c.row, c.model * 2)
    assert not twice.within


@pytest.mark.parametrize("term", ["step_s", "dispatch_s"])
def test_the_host_terms_are_fitted_to_their_rows_and_shipped(term, checks):
    row = calibrating(term)
    assert abs(checks[row.id].ratio - 1) < 0.005
    assert getattr(VLLM_HOST, term) > 0


def test_a_fresh_host_fit_matches_the_shipped_one():
    done = subprocess.run([sys.executable, "tools/calibrate_host.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_page_shows_a_fresh_run(checks):
    sys.path.insert(0, str(ROOT / "tools"))
    import validate_serving_published as page

    text = (ROOT / "docs" / "serving-validation.md").read_text()
    shown = text.split(page.BEGIN, 1)[1].split(page.END, 1)[0].strip()
    assert shown == page.table(list(checks.values())), \
        "docs/serving-validation.md is stale: run tools/validate_serving_published.py"


def test_the_fit_is_not_the_test():
    # a term fitted to one row moves the others: without the host's time the small-model rows
    # of vLLM leave their band (the fit is what brings them in, the rows then test it)
    import dataclasses

    from schedatrix.serving.validation.replay import replay

    row = next(r for r in TESTED if r.id == "vllm-ci-h100-8b-bs8")
    no_host = replay(row, dataclasses.replace(VLLM_HOST, step_s=0.0))
    assert no_host / row.value < 0.85 < check(row).ratio


# -- fixed costs per iteration --------------------------------------------------------------------
def test_the_host_time_is_a_term_of_every_iteration_and_host_ms_replaces_it():
    base = PerfModel("llama-3.1-8b", "h100-80gb")
    none = PerfModel("llama-3.1-8b", "h100-80gb", host_s=0.0)
    more = PerfModel("llama-3.1-8b", "h100-80gb", host_s=0.005)
    for batch in [((), 1, 500), ((), 64, 64 * 500), ([(2048, 0)], 0, 0)]:
        assert base.iteration_s(*batch) - none.iteration_s(*batch) == \
            pytest.approx(VLLM_HOST.step_s)
        assert more.iteration_s(*batch) - none.iteration_s(*batch) == pytest.approx(0.005)
    a, b = base.decode_line(8)     # the fast simulator's closed form keeps the host's time
    assert a + b * 800 == pytest.approx(base.iteration_s((), 8, 800))


def test_without_cuda_graphs_a_small_batch_waits_for_the_host_and_a_large_one_does_not():
    on = PerfModel("llama-3.1-8b", "h100-80gb")
    off = PerfModel("llama-3.1-8b", "h100-80gb", cuda_graphs=False)
    small = off.iteration_s((), 8, 800) / on.iteration_s((), 8, 800)
    large = off.iteration_s([(8192, 0)]) / on.iteration_s([(8192, 0)])
    assert small > 1.15 and large == pytest.approx(1.0, rel=1e-3)  # 8,192 tokens: eager anyway
    assert on.launched_eagerly(CUDA_GRAPH_MAX_TOKENS + 1)
    assert not on.launched_eagerly(CUDA_GRAPH_MAX_TOKENS)
    assert off.launched_eagerly(1)


def test_a_small_model_stops_gaining_from_tensor_parallelism_at_batch_one():
    # the weights split, but the launches, the all-reduces and the host's time do not: for an 8B
    # model at batch 1, TP8 is within a fifth of TP4, where the weights alone would halve
    steps = {tp: PerfModel("llama-3.1-8b", "h100-80gb", tp=tp).iteration_s((), 1, 1000)
             for tp in (1, 2, 4, 8)}
    assert 0.8 < steps[8] / steps[4] < 1.0
    big = {tp: PerfModel("llama-3.1-70b", "h100-80gb", tp=tp).iteration_s((), 1, 1000)
           for tp in (4, 8)}
    assert big[8] / big[4] < 0.8              # while the weights dominate, TP still pays
    free = PerfModel("llama-3.1-8b", "h100-80gb", tp=8, host_s=0.0).iteration_s((), 1, 1000)
    assert free < steps[8] - 1e-3             # the host's share of it is one of the causes


def test_collectives_launched_eagerly_never_fall_below_their_profiled_floor():
    from schedatrix.serving.perf.catalog import gpu
    from schedatrix.serving.perf.kernels import allreduce_s, collective_floor_s, efficiency

    e, g = efficiency("h100-80gb"), gpu("h100-80gb")
    for p in (2, 4, 8):
        assert float(allreduce_s(e, g, 16, p)) >= float(collective_floor_s(e, p)) > 0
        assert float(allreduce_s(e, g, 16, p)) >= float(allreduce_s(e, g, 16, p, floored=False))
    # the H100's 4-GPU floor (38 us) is above the ring's fitted latency (26 us): it binds
    assert float(allreduce_s(e, g, 16, 4)) > float(allreduce_s(e, g, 16, 4, floored=False))
    assert float(collective_floor_s(e, 1)) == 0.0


# -- each phase its own parallelism and GPU --------------------------------------------------------
def test_a_split_counts_each_side_at_its_size_and_price():
    d = Design(model="llama-3.1-70b", gpu="h100-80gb", tp=4, prefill_replicas=2,
               decode_replicas=1, prefill_tp=4, decode_tp=8)
    assert d.gpus == 2 * 4 + 8 and d.gpus_by_kind() == {"h100-80gb": 16}
    mixed = Design(model="llama-3.1-8b", prefill_replicas=1, decode_replicas=2,
                   prefill_gpu="h100-80gb", decode_gpu="a100-80gb")
    assert mixed.gpus_by_kind() == {"h100-80gb": 1, "a100-80gb": 2}
    assert mixed.dollars_per_hour == pytest.approx(3.00 + 2 * 1.30)
    assert "h100-80gb" in mixed.name and "a100-80gb" in mixed.name
    built = build(mixed)
    assert isinstance(built.perf, dict) and built.perf["decode"].gpu.name == "a100-80gb"
    nodes = {p.role: p.nodes for p in built.layout.replicas}
    assert nodes["prefill"] != nodes["decode"]      # one kind of GPU to a node


def test_the_kv_move_between_two_kinds_crosses_infiniband_and_the_larger_shard_sets_it():
    h100 = PerfModel("llama-3.1-8b", "h100-80gb")
    a100 = PerfModel("llama-3.1-8b", "a100-80gb")
    tp2 = PerfModel("llama-3.1-8b", "h100-80gb", tp=2)
    assert h100.kv_transfer_s(4096, True, to=a100) == pytest.approx(
        h100.kv_transfer_s(4096, False))
    assert tp2.kv_transfer_s(4096, True, to=h100) == pytest.approx(
        h100.kv_transfer_s(4096, True))            # the TP1 side holds the whole shard


def test_per_phase_knobs_need_a_split_and_name_themselves():
    with pytest.raises(InputError, match="prefill_tp"):
        Design(prefill_tp=2)
    with pytest.raises(InputError, match="decode_gpu"):
        Design(prefill_replicas=1, decode_replicas=1, decode_gpu="b200")
    with pytest.raises(InputError, match="the prefill side"):
        Design(model="llama-3.1-70b", gpu="h100-80gb", tp=4, prefill_replicas=1,
               decode_replicas=1, prefill_tp=1)


def test_a_split_whose_sides_differ_serves_a_load_in_both_simulators():
    from schedatrix.serving.load.workload import generate
    from schedatrix.serving.sim.simulate import simulate

    d = Design(model="llama-3.1-8b", gpu="h100-80gb", prefill_replicas=1, decode_replicas=1,
               prefill_tp=1, decode_tp=2)
    req = generate(Load(rate_rps=5, input_len="512", output_len="64"), 0, requests=200)
    fast, ref = simulate(req, d), simulate(req, d, "reference")
    assert (fast.status == 0).all()
    np.testing.assert_allclose(fast.done_s, ref.done_s, rtol=1e-9)


# -- DistServe's goodput --------------------------------------------------------------------------
def _slo_load(rate=2.0):
    return Load(rate_rps=rate, input_len="1024", output_len="128",
                classes=[SLOClass("all", 1.0, ttft_s=0.5, tpot_s=0.05)])


def test_goodput_is_the_highest_rate_meeting_the_attainment():
    d = Design(model="llama-3.1-8b", gpu="h100-80gb")
    g = goodput_capacity(d, _slo_load(), 0.9, requests=1000)
    assert g.max_rate_rps > 0 and g.attained >= 0.9
    assert g.rate_per_gpu == pytest.approx(g.max_rate_rps / d.gpus)
    failing = [r for r, _, ok in g.tried if not ok]
    assert failing and min(failing) > g.max_rate_rps      # a higher rate was tried and failed
    looser = goodput_capacity(d, _slo_load(), 0.5, requests=1000)
    assert looser.max_rate_rps >= g.max_rate_rps
    two = goodput_capacity(d.with_(replicas=2), _slo_load(), 0.9, requests=1000)
    assert two.max_rate_rps > 1.6 * g.max_rate_rps


def test_goodput_refuses_what_has_no_rate_or_no_slo():
    d = Design()
    with pytest.raises(InputError, match="no SLO"):
        goodput_capacity(d, Load(rate_rps=1.0), 0.9)
    with pytest.raises(InputError, match="attainment"):
        goodput_capacity(d, _slo_load(), 1.5)




def test_serving_capacity_on_the_command_line():
    done = run_in_process("serving", "capacity", "--model", "llama-3.2-3b", "--gpu", "h100-80gb",
                "--rate", "2", "--input-len", "512", "--output-len", "64", "--slo-ttft",
                "0.5", "--slo-tpot", "0.05", "--requests", "1000", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["max_rate_rps"] > 0 and out["rate_per_gpu"] == out["max_rate_rps"]
    assert out["attainment"] == 0.9 and out["attained"] >= 0.9
    text = run_in_process("serving", "capacity", "--model", "llama-3.2-3b", "--rate", "2",
                "--slo-ttft", "0.5", "--requests", "1000")
    assert text.returncode == 0 and "goodput (DistServe)" in text.stdout


@pytest.mark.parametrize("args,word", [
    (["serving", "capacity", "--rate", "2"], "no SLO"),
    (["serving", "capacity", "--rate", "2", "--slo-ttft", "1", "--attainment", "0"],
     "--attainment"),
    (["serving", "run", "--cuda-graphs", "sometimes"], "--cuda-graphs"),
    (["serving", "run", "--host-ms", "-1"], "--host-ms"),
    (["serving", "run", "--host-ms", "nan"], "--host-ms"),
    (["serving", "run", "--decode-tp", "2"], "decode_tp"),
    (["serving", "run", "--prefill-replicas", "1", "--decode-replicas", "1",
      "--prefill-gpu", "tpu"], "--prefill-gpu"),
])
def test_bad_values_are_refused_in_one_line(args, word):
    done = run_in_process(*args)
    assert done.returncode == 2 and word in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_the_flags_and_the_toml_keys_set_the_same_design(tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text('[load]\nrate = 3\nrequests = 150\ninput_len = "256"\n'
                        'output_len = "32"\n[[designs]]\nmodel = "llama-3.1-8b"\n'
                        'gpu = "h100-80gb"\nprefill_replicas = 1\ndecode_replicas = 1\n'
                        'decode_tp = 2\ncuda_graphs = false\nhost_ms = 3.0\n')
    from_file = json.loads(run_in_process("serving", "run", str(scenario), "--json").stdout)
    from_flags = json.loads(run_in_process(
        "serving", "run", "--model", "llama-3.1-8b", "--gpu", "h100-80gb", "--prefill-replicas",
        "1", "--decode-replicas", "1", "--decode-tp", "2", "--cuda-graphs", "off",
        "--host-ms", "3", "--rate", "3", "--requests", "150", "--input-len", "256",
        "--output-len", "32", "--json").stdout)
    a, b = from_file["designs"][0], from_flags["designs"][0]
    assert a["design"]["decode_tp"] == 2 and a["design"]["cuda_graphs"] is False
    assert a["gpus"] == b["gpus"] == 3
    assert a["ttft_p50"] == b["ttft_p50"] and a["e2e_p50"] == b["e2e_p50"]
    bad = tmp_path / "bad.toml"
    bad.write_text(scenario.read_text().replace("cuda_graphs = false", 'cuda_graphs = "no"'))
    done = run_in_process("serving", "run", str(bad))
    assert done.returncode == 2 and "cuda_graphs" in done.stderr


def test_serving_capacity_writes_what_its_out_promises(tmp_path):
    """--out writes report.md, a PNG and result.json, as its help says (issue 35); result.json
    is the --json object."""
    args = ("serving", "capacity", "--model", "llama-3.2-3b", "--gpu", "h100-80gb", "--rate",
            "2", "--input-len", "512", "--output-len", "64", "--slo-ttft", "0.5", "--slo-tpot",
            "0.05", "--requests", "1000")
    done = run_in_process(*args, "--out", str(tmp_path / "cap"))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "cap").iterdir()) == \
        ["capacity.png", "report.md", "result.json"]
    written = json.loads((tmp_path / "cap" / "result.json").read_text())
    printed = json.loads(run_in_process(*args, "--json").stdout)
    assert written == printed and written["max_rate_rps"] > 0
    report = (tmp_path / "cap" / "report.md").read_text()
    assert "goodput (DistServe)" in report and "capacity.png" in report
    assert report.count("| yes |") + report.count("| no |") == len(written["tried"])
    assert (tmp_path / "cap" / "capacity.png").read_bytes()[:4] == b"\x89PNG"


def test_s_loras_rows_miss_on_the_cost_of_serving_adapters_at_all():
    """Why the LoRA kind leans, by runs that change the cause (validation/lora_regime.py): the
    literal replay has room at 10 req/s, so with 1 to 50 adapters its ratio stays near 1.
    Offered 3 times the rate the server falls behind with and without adapters (5 times gives
    the same ratio), and the ratio is the adapters' cost alone: one adapter costs the model 3%
    against S-LoRA's 20%, while at S-LoRA's mean rank the model's cost grows with the distinct
    adapters to the published 22% at 200. S-LoRA's ratios are flat in N; the model's fall."""
    from schedatrix.serving.validation.lora_regime import MIX_MEAN_RANK, lora_regime_study

    rows = {r.row.adapters: r for r in lora_regime_study(rank=MIX_MEAN_RANK)}
    padded = {r.row.adapters: r for r in lora_regime_study()}
    # the table in docs/serving-validation.md is these runs, rounded
    page = (ROOT / "docs" / "serving-validation.md").read_text()
    for n in sorted(rows):
        line = (f"  | {n} | {rows[n].published:.2f} | {padded[n].literal:.2f} | "
                f"{padded[n].saturated:.2f} | {rows[n].saturated:.2f} |")
        assert line in page, line
    one = rows[1]
    again = lora_regime_study(LORA_PUBLISHED[:1], scale=5.0, rank=MIX_MEAN_RANK)[0]
    assert again.saturated == pytest.approx(one.saturated, abs=0.01)      # saturated at 3x
    assert all(rows[n].literal > 0.985 for n in (1, 20, 50))              # room at 10 req/s
    assert one.cost < 0.05 and one.published < 0.81                       # 3% against 20%
    assert rows[200].saturated == pytest.approx(rows[200].published, rel=0.03)
    ns = sorted(rows)
    falls = [rows[n].saturated for n in ns]
    assert falls == sorted(falls, reverse=True) and len(set(falls)) == len(falls)   # in N
    published = [rows[n].published for n in ns]
    assert max(published) - min(published) < 0.05                        # S-LoRA's: flat
    with pytest.raises(InputError, match="rank: 7"):
        lora_regime_study(rank=7)
    with pytest.raises(InputError, match="scale"):
        lora_regime_study(scale=0.5)


def test_the_cpu_tiers_published_points_rise_at_43_gb_s():
    # the six copies read off the offloading post's Figure 1, fitted by a line: most of the
    # model's early copy is the copy's rate in use (43.1 GB/s), below the post's own copy
    # benchmark (48.2) and the model's 50 GB/s, not a fixed wait (7 ms at no tokens)
    from schedatrix.serving.perf.catalog import model
    from schedatrix.serving.perf.pcie import h2d_gb_s
    from schedatrix.serving.published.offload_rows import FIGURE1_TTFT_MS

    points = [(t, cpu) for t, _, cpu in FIGURE1_TTFT_MS if cpu is not None]
    assert [t for t, _ in points] == list(range(50_000, 100_001, 10_000))
    slope, at_zero = np.polyfit(*np.array(points, dtype=float).T, 1)
    assert round(slope * 1000, 2) == 3.04 and round(at_zero) == 7
    rate = model("llama-3.1-8b").kv_bytes_per_token / (slope / 1e3) / 1e9
    assert round(rate, 1) == 43.1
    assert round((1 - rate / 48.2) * 100) == 11                  # the post's copy benchmark
    assert round((1 - rate / h2d_gb_s("h100-80gb")) * 100) == 14  # the model's rate
