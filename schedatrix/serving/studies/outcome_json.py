"""One design's figures over its runs as plain JSON: what reports, sweeps and the acceptance
harness write for each design (means, intervals, per class, the verdict)."""

from __future__ import annotations

import dataclasses
import math

from ..figures.metrics import Figures
from .acceptance import Outcome, interval

__all__ = ["FIGURE_KEYS", "design_json", "finite", "kv_offload_json"]

#: Every figure a design reports (seconds, fractions, per second), in order.
FIGURE_KEYS = tuple(k for k in Figures.__dataclass_fields__
                    if k not in ("span_s", "load_span_s"))


def finite(v):
    """``v`` as a float, or None when it is None, NaN or infinite (JSON has neither)."""
    if v is None:
        return None
    v = float(v)
    return None if not math.isfinite(v) else v


def _plain(v):
    """A knob as JSON has it (a calibrated client path: its terms)."""
    return dataclasses.asdict(v) if dataclasses.is_dataclass(v) else v


def design_json(o: Outcome) -> dict:
    """One design's figures: means over the runs (one run: its figures), intervals when
    there are several runs, per class, the verdict."""
    d = o.design
    out: dict = {"name": d.name, "gpus": d.gpus}
    for k in FIGURE_KEYS:
        m = interval(o.values(k))[0]
        out[k] = int(round(m)) if k in ("arrived", "completed", "rejected", "failed",
                                         "preemptions") and m == m else finite(m)
    out["kv_peak_share"] = finite(interval(o.kv_peak_share)[0])
    span = interval(o.values("span_s"))[0]
    out["link_busy_share"] = finite(interval(o.link_busy_s)[0] / span
                                  / max(d.prefill_replicas, 1)) if d.split and span else None
    out["prefix_hit_share"] = finite(interval(o.prefix_hit_share)[0])
    if d.kv_offload_gb:
        out["kv_offload"] = kv_offload_json(o)
    if d.lora_adapters:
        out["lora"] = lora_json(o)
    reasons: dict = {}
    for per_run in o.reasons:
        for (reason, c), count in per_run.items():
            by_class = reasons.setdefault(reason, {})
            name = o.classes[c].name
            by_class[name] = by_class.get(name, 0) + count / len(o.reasons)
    out["rejected_by_reason"] = reasons
    out["cost_per_mtok"] = finite(interval(o.cost_per_mtok())[0])
    out["price_per_gpu_hour"] = d.price
    out["runs"] = len(o.runs)
    if len(o.runs) > 1:
        out["intervals"] = {k: [finite(x) for x in interval(o.values(k))[1:]]
                            for k in FIGURE_KEYS if k not in ("arrived",)}
    out["per_class"] = {
        cls.name: {**{k: finite(interval(o.values(k, c))[0]) for k in FIGURE_KEYS},
                   "ttft_slo_s": cls.ttft_s, "tpot_slo_s": cls.tpot_s,
                   "priority": cls.priority}
        for c, cls in enumerate(o.classes)}
    out["synthetic"] = o.synthetic
    dec = o.decision
    out["runs_met"] = sum(o.meets()) if o.has_slo else None
    out["decision"] = None if dec is None else {
        "state": dec.state, "share_low": dec.low, "share_high": dec.high,
        "run_share": dec.required, "confidence": dec.confidence,
        "indicative": dec.indicative, "exact": dec.exact}
    out["passed"] = o.passed
    out["status"] = o.status
    if o.stopped:
        out["stopped"] = o.stopped
    out["room_to_spare"] = o.room_to_spare
    out["verdict"] = o.verdict()
    out["design"] = {k: _plain(getattr(d, k)) for k in d.__dataclass_fields__}
    return out


def kv_offload_json(o: Outcome) -> dict:
    """The CPU tier's figures, means over the runs: the prefix hit shares by tier, and the
    seconds its copies took against the prefill they saved."""
    tiers = o.kv_tiers
    mean = lambda key: finite(interval([getattr(t, key) for t in tiers])[0])  # noqa: E731
    return {"gb": o.design.kv_offload_gb, "prefix_hit_share_hbm": mean("hbm_hit_share"),
            "prefix_hit_share_cpu": mean("cpu_hit_share"), "load_s": mean("load_s"),
            "recompute_saved_s": mean("recompute_saved_s")}


def lora_json(o: Outcome) -> dict:
    """The adapters' figures, means over the runs: admissions by where their adapter was,
    the times a request was passed over for a slot, the seconds of loads and of kernels."""
    d = o.design
    return {"adapters": d.lora_adapters, "max_loras": d.max_loras,
            **{k: finite(interval([r[k] for r in o.lora])[0]) for k in o.lora[0]}}
