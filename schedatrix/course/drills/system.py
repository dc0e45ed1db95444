"""Serving drill kinds about the system around one replica: queues, goodput, the prefix cache,
the split's KV move, recovery from a crash.

Each kind is ``pose(replica, r)``, as the replica kinds of :mod:`.serving_drills` are (the
replica gives its model, GPU and TP to the kinds that need them), and returns a
:class:`~.question.Question`, or None when the draw does not make a fair
question (a model that does not fit the TP drawn). Every number an answer is computed from is
printed in its prompt, and the answer is the library's: the M/G/1 wait of
:func:`~schedatrix.serving.studies.queueing.mg1` (Pollaczek-Khinchine), Little's law of
:func:`~schedatrix.serving.studies.queueing.in_system`, a design's GPUs as
:class:`~schedatrix.serving.cluster.deployment.Design` counts them (DistServe's goodput per
GPU), the prefix the :class:`~schedatrix.serving.replica.kv_cache.KVCache` matches, the KV
move of :meth:`~schedatrix.serving.perf.model.PerfModel.kv_transfer_s` and the weights' reload
after a crash as the simulator times it (tests/test_serving_drills.py checks each against it).
"""

from __future__ import annotations

import random

from ...errors import InputError
from ...serving.cluster.deployment import Design
from ...serving.cluster.faults import Resilience
from ...serving.cluster.restart import WEIGHT_SOURCES, RestartCosts
from ...serving.perf.model import PerfModel, allowed_tp
from ...serving.replica.kv_cache import KVCache
from ...serving.studies.queueing import in_system, mg1
from .question import Question

__all__ = ["mg1_wait", "littles_law", "goodput_per_gpu", "prefix_cache", "kv_move",
           "recovery", "KINDS"]


#: Output tokens every prompt these kinds draw leaves room for in the model's context (as
#: the serving drills' PROMPT_ROOM: the simulator admits prompt + output <= max_context).
PROMPT_ROOM = 256


def _pick(r: random.Random, options):
    return options[int(r.random() * len(options))]


def mg1_wait(rep, r: random.Random) -> Question:
    """The mean wait in the queue of a replica that serves one request at a time (M/G/1)."""
    mean_ms = _pick(r, (40, 60, 80, 120, 150, 250))
    cv = _pick(r, (0.25, 0.5, 0.75))
    rate = round(_pick(r, (0.5, 0.6, 0.7, 0.8, 0.9)) / (mean_ms / 1e3), 2)
    s = mean_ms / 1e3
    q = mg1(rate, [s * (1 - cv), s * (1 + cv)])          # mean s, standard deviation cv x s
    wait = q.wait_s * 1e3
    return Question(
        "mg1_wait",
        f"A replica with max_batch 1 serves one request at a time. Requests arrive as a "
        f"Poisson stream at {rate:g} a second; their service times average {mean_ms} ms with a "
        f"coefficient of variation of {cv:g}. By Pollaczek-Khinchine, how many milliseconds "
        "does a request wait in the queue before its service starts, on average?",
        wait, "figure",
        f"rho = {rate:g} x {s:g} s = {q.rho:.3f}; E[S^2] = E[S]^2 (1 + CV^2) = "
        f"{s * s * (1 + cv * cv) * 1e6:,.0f} ms^2; W_q = lambda E[S^2] / (2 (1 - rho)) = "
        f"{wait:,.1f} ms.",
        "The wait grows with the load (1 / (1 - rho)) and with the service times' spread "
        "(E[S^2], not E[S]^2): work in seconds, convert at the end.",
        unit="ms", rel_tolerance=0.01,
    )


def littles_law(rep, r: random.Random) -> Question:
    """Requests in the engine on average, by Little's law, from a rate and a time in system."""
    rate = _pick(r, (2, 4, 5, 8, 12, 20))
    ttft_ms = _pick(r, (150, 300, 450, 800))
    out = _pick(r, (64, 128, 200, 256, 400))
    tpot_ms = _pick(r, (12, 20, 30, 45))
    stay = ttft_ms / 1e3 + (out - 1) * tpot_ms / 1e3
    held = in_system(rate, stay)
    return Question(
        "littles_law",
        f"A replica takes {rate} requests a second, and as many leave. The average request "
        f"waits {ttft_ms} ms for its first token, then streams {out - 1} more tokens at "
        f"{tpot_ms} ms each. How many requests does the replica hold at once, on average "
        "(waiting or running)?",
        held, "figure",
        f"Each stays {ttft_ms / 1e3:g} + {out - 1} x {tpot_ms / 1e3:g} = {stay:.3f} s; "
        f"Little's law, L = lambda W = {rate} x {stay:.3f} = {held:.1f} requests.",
        "Little's law holds for any queue, batched or not: the mean number inside is the "
        "arrival rate times the mean time inside.",
        unit="requests", rel_tolerance=0.01,
    )


def _split_design(r: random.Random, model: str, gpu: str) -> Design:
    p, d = _pick(r, ((1, 1), (2, 1), (3, 1), (2, 2), (3, 2)))
    tp = _pick(r, (1, 2)) if model != "llama-3.1-70b" else 4
    ptp = _pick(r, (None, tp * 2)) if tp < 8 else None
    dtp = _pick(r, (None, tp * 2)) if tp < 8 and ptp is None else None
    return Design(model=model, gpu=gpu, tp=tp, prefill_replicas=p, decode_replicas=d,
                  prefill_tp=ptp, decode_tp=dtp)


def goodput_per_gpu(rep, r: random.Random) -> Question:
    """DistServe's goodput per GPU: of a colocated design and a split, the better per GPU (the
    designs on the replica's GPU, both of which the simulator builds)."""
    model = rep.model.name if rep.model.name != "llama-2-7b" else "llama-3.1-8b"
    tp = 4 if model == "llama-3.1-70b" else _pick(r, (1, 2))
    together = Design(model=model, gpu=rep.gpu.name, tp=tp, replicas=_pick(r, (2, 3, 4)))
    split = _split_design(r, model, rep.gpu.name)
    rates = {}
    for d in (together, split):
        rates[d.name] = round(d.gpus * _pick(r, (1.5, 2.0, 2.5, 3.0, 3.5, 4.0))
                              * (0.35 if model == "llama-3.1-70b" else 1.0)
                              * (1 + 0.3 * r.random()), 1)
    per = {d.name: rates[d.name] / d.gpus for d in (together, split)}
    best = max(per.values())
    return Question(
        "goodput_per_gpu",
        f"For the same load and SLOs, suppose a search finds the highest rate at which 90% "
        f"of requests meet the SLOs (the serving capacity, DistServe's goodput): "
        f"{together.name} of {model} on {rep.gpu.name}, "
        f"{rates[together.name]:g} requests a second; the prefill/decode "
        f"{split.name} (P prefill replicas : D decode replicas, each side at the TP "
        f"shown), {rates[split.name]:g} a second. Of the two, what is the better goodput per "
        "GPU, in requests a second?",
        best, "figure",
        f"{together.name}: {together.gpus} GPUs, {per[together.name]:.3f} a GPU; "
        f"{split.name}: {split.gpus} GPUs, {per[split.name]:.3f} a GPU; the better is "
        f"{best:.3f}.",
        "Count each design's GPUs first: replicas x TP, and for a split each side's replicas "
        "at its own TP. Then divide each rate by its GPUs.",
        unit="requests/s per GPU", rel_tolerance=0.01,
    )


def prefix_cache(rep, r: random.Random) -> Question:
    """The prompt tokens a prefill computes when a shared system prompt is in the cache."""
    block = _pick(r, (16, 32, 64, 256, 512))
    # a prompt the replica's model takes, with room for its output
    longest = rep.model.max_context - PROMPT_ROOM
    shared = _pick(r, [s for s in (300, 700, 1000, 1500, 2500, 4000)
                       if s + 100 + 50 + 50 <= longest]) + int(r.random() * 100)
    prompt = shared + _pick(r, [t for t in (50, 200, 600, 1500)
                                if shared + t + 50 <= longest]) + int(r.random() * 50)
    if _pick(r, (0, 1, 2, 3)) == 0:       # now and then, all of the prompt is the shared part
        prompt = shared
    # the library's cache: one request inserts its prompt's blocks, a second one matches
    hashes_of = lambda who: [b if (b + 1) * block <= shared else 10**6 * who + b   # noqa: E731
                             for b in range(prompt // block)]
    cache = KVCache(total_blocks=10**6, block_tokens=16, hash_block_tokens=block)
    cache.insert(hashes_of(1), 0, prompt)
    hits = cache.match(hashes_of(2), prompt)
    computed = prompt - hits * block
    return Question(
        "prefix_cache",
        f"Every prompt of a service begins with the same {shared:,}-token system prompt. "
        f"The prefix cache keeps whole blocks of {block} tokens, and a prompt's last token is "
        f"always computed (it yields the first output token). A {prompt:,}-token prompt "
        "arrives after another has filled the cache: how many of its tokens does its prefill "
        "compute?",
        computed, "count",
        f"Blocks wholly inside the shared part: {shared:,} // {block} = {shared // block}, at "
        f"most ({prompt:,} - 1) // {block} = {(prompt - 1) // block}; {hits} blocks x {block} = "
        f"{hits * block:,} tokens come from the cache, {computed:,} are computed.",
        "Only whole blocks are cached, and only blocks every prompt shares: a block that runs "
        "past the system prompt differs between prompts.",
        unit="tokens",
    )


def kv_move(rep, r: random.Random) -> Question | None:
    """The milliseconds a split's KV move of one prompt takes, by the side with the bigger
    shard a GPU, in a machine or between two."""
    m, g = rep.model, rep.gpu
    tps = [t for t in allowed_tp(m) if t <= 8]
    tp_p, tp_d = _pick(r, tps), _pick(r, tps)
    try:
        pre, dec = PerfModel(m, g, tp=tp_p), PerfModel(m, g, tp=tp_d)
    except InputError:
        return None
    # a prompt the model takes (with room for its output) and both sides' caches hold
    longest = min(m.max_context - PROMPT_ROOM, pre.kv_capacity_tokens(),
                  dec.kv_capacity_tokens()) - 32
    tokens = _pick(r, [t for t in (512, 1000, 2000, 4000, 8000) if t <= longest]) \
        + int(r.random() * 32)
    same = r.random() < 0.5
    ms = pre.kv_transfer_s(tokens, same_node=same, to=dec) * 1e3
    e = pre.eff
    shard = max(pre.kv_bytes_per_token_per_gpu, dec.kv_bytes_per_token_per_gpu)
    if same:
        bw, lat = g.link_one_way_gb_s * e.send_link_share, e.send_latency_s
        link = (f"in one machine: each GPU's link moves {bw:,.1f} GB/s after {lat * 1e6:.1f} µs "
                f"(never under {e.send_floor_s * 1e6:.1f} µs in all)")
    else:
        bw, lat = pre.inter_node_gb_s * e.inter_node_share, e.inter_node_latency_s
        link = (f"between two machines: each GPU's share of InfiniBand moves {bw:,.2f} GB/s "
                f"after {lat * 1e6:.1f} µs")
    return Question(
        "kv_move",
        f"A prefill/decode split of {m.name} on {g.name}: a prefill replica of TP{tp_p} "
        f"hands a {tokens:,}-token prompt's KV cache to a decode replica of TP{tp_d}, "
        f"{link}. A GPU of the prefill side holds {pre.kv_bytes_per_token_per_gpu:,} bytes of "
        f"each token's KV, one of the decode side {dec.kv_bytes_per_token_per_gpu:,}. All GPUs "
        "send their shards at once. How many milliseconds does the move take?",
        ms, "figure",
        f"The side whose GPUs hold more sets the time: {shard:,} bytes a token x {tokens:,} "
        f"tokens = {shard * tokens / 1e6:,.2f} MB through one GPU's link at {bw:,.2f} GB/s, "
        f"plus {lat * 1e6:.1f} µs: {ms:.3f} ms.",
        "Every GPU moves its own shard in parallel, so the time is one GPU's bytes over one "
        "link; a side of many GPUs sending to a side of few still has to fill GPUs that each "
        "hold a bigger share of a token.",
        unit="ms", rel_tolerance=0.01,
    )


def recovery(rep, r: random.Random) -> Question | None:
    """Seconds from a worker's crash until its replica serves again: down, then the restart's
    phases (engine start, the weights read from where they are kept, compile, CUDA-graph
    capture, warm-up)."""
    m, g, tp = rep.model, rep.gpu, rep.tp
    try:
        perf = PerfModel(m, g, tp=tp)
    except InputError:
        return None
    res = Resilience(health_check_s=_pick(r, (2.0, 5.0, 10.0)),
                     restart=RestartCosts(weights_from=_pick(r, tuple(WEIGHT_SOURCES))))
    down = _pick(r, (10, 20, 30, 60))
    rs = res.restart
    phases = rs.phases_s(perf.weights_bytes_per_gpu)
    fixed = phases["engine start"] + phases["compile"] + phases["graph capture"] + \
        phases["warm-up"]
    # what the simulator waits after DOWN: the restart's phases, the weights per GPU at its rate
    back = down + rs.total_s(perf.weights_bytes_per_gpu)
    return Question(
        "recovery",
        f"The worker of this replica crashes. The router notices {res.health_check_s:g} s "
        f"later; the worker's process is restarted {down} s after the crash. The restart: "
        f"the engine starts ({rs.engine_start_s:g} s), each GPU reads its share of the "
        f"weights ({perf.weights_bytes_per_gpu / 1e9:,.2f} GB) from {rs.weights_from} at "
        f"{rs.load_gb_s:g} GB/s, all GPUs at once, then compile ({rs.compile_s:g} s), CUDA-graph "
        f"capture ({rs.graph_capture_s:g} s) and warm-up ({rs.warmup_s:g} s). How many seconds "
        "after the crash does the replica serve again?",
        back, "figure",
        f"{down} s down + {fixed:g} s of engine start, compile, capture and warm-up + "
        f"{perf.weights_bytes_per_gpu / 1e9:,.2f} GB / {rs.load_gb_s:g} GB/s = {back:,.1f} s "
        "(the health check decides only when lost requests are retried elsewhere).",
        "The weights are read on every GPU at once, each its own share; the restart's other "
        "phases do not shrink with more GPUs. The health check is when the router stops "
        "sending there, not when the replica is back.",
        unit="s", rel_tolerance=0.01,
    )


#: The kinds by id, for the serving drills' registry.
KINDS = {"mg1_wait": mg1_wait, "littles_law": littles_law, "goodput_per_gpu": goodput_per_gpu,
         "prefix_cache": prefix_cache, "kv_move": kv_move, "recovery": recovery}
