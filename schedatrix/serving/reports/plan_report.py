"""A placement plan (:mod:`.plan`) as lines for the terminal and as one JSON object."""

from __future__ import annotations

from ...text import wrap
from ..studies.outcome_json import finite
from ..studies.plan import Plan

__all__ = ["plan_lines", "plan_json"]


def _counts(counts: dict[str, int]) -> str:
    return " + ".join(f"{n} x {k}" for k, n in counts.items())


def plan_lines(p: Plan) -> list[str]:
    """The plan in plain lines: the pool, each model's placement, GPUs, verdict and headroom,
    the GPUs used and idle, which model breaks first; or why nothing fits and the smallest
    count that would. Each line fits :data:`schedatrix.text.WIDTH` columns (a long sentence
    goes on over indented lines)."""
    return [wrapped for line in _lines(p) for wrapped in wrap(line).split("\n")]


def _lines(p: Plan) -> list[str]:
    pool = p.pool
    lines = [f"pool: {pool.describe()}; {pool.attainment:.0%} of each model's requests within "
             f"its SLOs; each rate at steady state (from {pool.requests:,} requests), seed "
             f"{pool.seed}{'' if pool.drift else '; drift dropped'}"]
    if not p.fits:
        lines.append(f"no placement fits in {pool.describe()}:")
        for name, why in p.unservable:
            who = "the models" if name == "all" else f"{name} cannot be served"
            lines.append(f"  {who}: {why}")
        if p.smallest_budget:
            lines.append(f"the smallest budget that would: {_counts(p.smallest_budget)}")
        else:
            lines.append("no budget of these GPUs would: a model above meets its SLOs on none "
                         "of them")
        return lines
    used, idle = p.gpus_used, p.gpus_idle
    lines.append(f"a placement fits: {_counts(used)} used, {sum(idle.values())} idle "
                 f"({_counts(idle)}), ${p.dollars_per_hour:,.2f} an hour")
    rows = [("model", "serves", "placement", "GPUs", "in SLOs", "headroom")]
    for m in p.models:
        s, o = m.spec, m.option
        where = ", ".join(o.design.gpus_by_kind())
        rows.append((s.name, f"{s.model} at {s.rate_rps:g} req/s", f"{o.design.name} {where}",
                     str(o.gpus), f"{'meets' if m.meets else 'MISSES'} {o.attained:.1%}",
                     f"x{m.headroom:.2f} = {m.goodput.max_rate_rps:.3g} req/s"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True))
                     .rstrip())
    first = p.breaks_first
    lines.append(f"breaks first as load grows: {first.spec.name} ({first.spec.model}), at "
                 f"x{first.headroom:.2f} its rate ({first.goodput.max_rate_rps:.3g} req/s)")
    for names, base, r in p.adapters:
        shared = (f"{r.shared.design.name} ({r.shared.gpus} GPUs, "
                  f"${r.shared.dollars_per_hour:,.2f} an hour)" if r.shared.replicas
                  else "no pool of up to 64 replicas")
        separate = (f"{r.separate_gpus} GPUs (${r.separate_dollars_per_hour:,.2f} an hour)"
                    if all(s.replicas for s in r.separate) else "no placement")
        lines.append(f"as adapters of {base}: {', '.join(names)} on {shared}, against each on "
                     f"replicas of its own: {separate}; cheaper: {r.cheaper}")
    lines.append("(in SLOs: the share of the model's requests within its own TTFT and TPOT SLOs "
                 "at its rate; headroom: the placement's goodput over that rate; synthetic loads: "
                 "model results, not production SLO performance)")
    return lines


def plan_json(p: Plan) -> dict:
    """The plan as one JSON-ready object (every figure of :func:`plan_lines`, and every unit
    the search tried)."""
    def design(d):
        return {"name": d.name, "gpus": d.gpus, "gpus_by_kind": d.gpus_by_kind(),
                "dollars_per_hour": d.dollars_per_hour,
                "knobs": {k: getattr(d, k) for k in d.__dataclass_fields__}}

    out = {
        "source": p.source, "pool": {"gpus": dict(p.pool.kinds),
                                     "attainment": p.pool.attainment,
                                     "requests_per_rate": p.pool.requests,
                                     "seed": p.pool.seed, "splits": p.pool.splits,
                                     "drift": p.pool.drift},
        "fits": p.fits,
        "models": [{
            "name": m.spec.name, "model": m.spec.model, "rate_rps": m.spec.rate_rps,
            "load": m.spec.load.describe(), "slo": {"ttft_s": m.spec.slo.ttft_s,
                                                    "tpot_s": m.spec.slo.tpot_s},
            "design": design(m.option.design), "units": m.option.units,
            "unit_goodput_rps": m.option.unit_goodput_rps, "attained": m.option.attained,
            "meets": m.meets, "max_rate_rps": m.goodput.max_rate_rps,
            "headroom": finite(m.headroom)} for m in p.models],
        "gpus_used": p.gpus_used if p.fits else None,
        "gpus_idle": p.gpus_idle if p.fits else None,
        "dollars_per_hour": p.dollars_per_hour if p.fits else None,
        "breaks_first": p.breaks_first.spec.name if p.fits else None,
        "unservable": [{"model": n, "why": w} for n, w in p.unservable],
        "adapters": [{"models": list(names), "base": base, "cheaper": r.cheaper,
                      "shared": {"replicas": r.shared.replicas, "gpus": r.shared.gpus,
                                 "dollars_per_hour": r.shared.dollars_per_hour,
                                 "design": r.shared.design.name},
                      "separate": {"gpus": r.separate_gpus,
                                   "dollars_per_hour": r.separate_dollars_per_hour,
                                   "replicas": [s.replicas for s in r.separate]}}
                     for names, base, r in p.adapters],
        "smallest_budget": p.smallest_budget,
        "tried": [{"model": name, "unit": unit.name, "gpus_by_kind": unit.gpus_by_kind(),
                   "goodput_rps": None if good is None else good.max_rate_rps,
                   "result": result} for name, unit, good, result in p.tried],
        "headroom_definition": "the placement's goodput (DistServe: the highest rate at which "
                               "the attainment share meets every SLO) over the model's rate",
        "synthetic": True,
    }
    return out
