"""The command line: ``schedatrix month``, ``presets``, ``odds``, ``audit`` and the course tools.

Bad input exits with status 2 and one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys

from .errors import InputError
from .fleet.cards import CARD_CLASSES
from .fleet.explain import money, pct, rate
from .fleet.month import Month, simulate
from .fleet.plan import Plan
from .fleet.presets import PRESETS, preset
from .fleet.run_set import SHAPES

__all__ = ["main", "build_parser", "plan_from_args"]


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2."""

    def error(self, message: str):  # noqa: D401 - argparse's hook
        raise InputError(message)


def _number(flag: str, kind=float):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            # argparse names the flag itself ("argument --cards: must be ...")
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
        if kind is float and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        return value

    return parse


def _add_knobs(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("knobs (each overrides the preset's)")
    g.add_argument("--preset", choices=list(PRESETS), metavar="NAME",
                   help="start from a preset (see `schedatrix presets`); default: walkthrough")
    g.add_argument("--cards", type=_number("--cards", int), metavar="N",
                   help="cards in the pool (1 to 4096)")
    g.add_argument("--card-class", choices=list(CARD_CLASSES), help="the pool's card class")
    g.add_argument("--demand", type=_number("--demand"), metavar="TOK_S",
                   help="average demand, tokens per second (> 0)")
    g.add_argument("--headroom", type=_number("--headroom"), metavar="PCT",
                   help="steady headroom above average demand, percent (>= 0)")
    g.add_argument("--shape", choices=list(SHAPES), help="demand shape = run-set policy")
    g.add_argument("--window", metavar="hour|day|week|HOURS",
                   help="score window: hour, day, week or 0.1 to 730 hours")
    g.add_argument("--evict-share", type=_number("--evict-share"), metavar="PCT",
                   help="share of the pool evicted by measured score, percent in [0, 100)")
    g.add_argument("--seed", type=_number("--seed", int), metavar="S",
                   help="the lottery draw (0 to 2**63 - 1)")


#: Plan field -> the command-line flag that sets it (for error messages).
_FLAGS = {"cards": "--cards", "card_class": "--card-class", "demand_tok_s": "--demand",
          "shape": "--shape", "window": "--window", "seed": "--seed"}


def plan_from_args(args: argparse.Namespace) -> Plan:
    """The preset's plan (walkthrough by default) with the given flags applied."""
    base = preset(args.preset or "walkthrough").plan
    knobs = {}
    if args.cards is not None:
        knobs["cards"] = args.cards
    if args.card_class is not None:
        knobs["card_class"] = args.card_class
    if args.demand is not None:
        knobs["demand_tok_s"] = args.demand
    if args.headroom is not None:
        if args.headroom < 0:
            raise InputError(f"--headroom must be a percentage >= 0, got {args.headroom:g}")
        knobs["headroom"] = args.headroom / 100
    if args.shape is not None:
        knobs["shape"] = args.shape
    if args.window is not None:
        knobs["window"] = args.window
    if args.evict_share is not None:
        if not 0 <= args.evict_share < 100:
            raise InputError(
                f"--evict-share must be a percentage in [0, 100), got {args.evict_share:g}"
            )
        knobs["evict_share"] = args.evict_share / 100
    if args.seed is not None:
        knobs["seed"] = args.seed
    try:
        return base.with_knobs(**knobs)
    except InputError as err:
        # Name the flag the user typed, not the Plan field behind it.
        field, _, rest = str(err).partition(" ")
        if field in _FLAGS:
            raise InputError(f"{_FLAGS[field]} {rest}") from None
        raise


def _describe(plan: Plan) -> str:
    cls = CARD_CLASSES[plan.card_class]
    head = f" +{pct(plan.headroom, 0)}" if plan.shape == "steady" else ""
    return (
        f"{plan.cards} x {cls.label}, {rate(plan.demand_tok_s)} tok/s {plan.shape}{head}, "
        f"{plan.window} window, evict {pct(plan.evict_share, 0)}, seed {plan.seed}"
    )


def readout(month: Month) -> str:
    """The page's readout block, bill split and verdict, as text."""
    m = month
    lamp = {True: "pass", False: "FAIL"}
    rows = [
        ("the month's pool bill", f"{money(m.bill)}  (run rent {money(m.run_rent)} + churn "
         f"{money(m.churn_fees)})"),
        ("cards warm in the run set", f"{m.warm} of {m.cards}"),
        ("tok/s delivered", f"{rate(m.delivered_tok_s)} of {rate(m.demand_tok_s)} demanded"),
        ("unmet demand (cap 5%)", pct(m.unmet_share, 2)),
        ("billed idle", money(m.idle_bill)),
        ("churn fees", f"{m.evicted} card{'' if m.evicted == 1 else 's'} evicted, "
         f"{money(m.churn_fees)} "
         f"({pct(m.churn_fees / m.bill)} of the bill)"),
        ("million tokens per dollar", f"{m.mtok_per_dollar:.3f} (ideal "
         f"{m.ideal_mtok_per_dollar:.3f})"),
        ("convergence", f"{pct(m.convergence)}  (ideal bill {money(m.ideal_bill)}, "
         f"{m.ideal_cards} cards)"),
        ("wrong evictions", f"{m.wrong_evictions} of {m.evicted} ({pct(m.wrong_share, 0)})"),
        ("pool median true rate", f"{rate(m.median_true_tok_s)} tok/s"),
        ("run-set target", f"{rate(m.target_tok_s)} tok/s"),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [_describe(m.plan), ""]
    lines += [f"  {k:<{width}}  {v}" for k, v in rows]
    lines += ["", "where the bill came from:"]
    for label, value in (("rent that moved tokens", m.moving_rent), ("idle rent", m.idle_bill),
                         ("churn fees", m.churn_fees)):
        lines.append(f"  {label:<{width}}  {money(value):>9}  {pct(value / m.bill):>6}")
    lines += [
        "",
        "checks:  " + "  ".join(f"{k} {lamp[v]}" for k, v in m.checks.items())
        + f"   signature {m.signature}",
        "",
        m.verdict,
        "",
    ]
    lines += [f"- {s}" for s in m.sentences]
    return "\n".join(lines)


def _json(value) -> str:
    """Strict JSON: a NaN or an infinity is an error here, never ``NaN``/``Infinity`` text
    (the plan refuses knobs whose figures would overflow, so this never fires on a plan)."""
    return json.dumps(value, indent=2, allow_nan=False)


def _cmd_month(args) -> int:
    month = simulate(plan_from_args(args))
    if args.json:
        print(_json(month.to_dict()))
    else:
        print(readout(month))
    return 0


def _cmd_presets(args) -> int:
    if args.json:
        print(_json({n: {"plan": p.plan.to_dict(), "story": p.story, "fixes": p.fixes}
                     for n, p in PRESETS.items()}))
        return 0
    for name, p in PRESETS.items():
        fix = f"  (fixes {p.fixes})" if p.fixes else ""
        print(f"{name}{fix}\n  {_describe(p.plan)}\n  {p.story}")
    return 0


def share(x: float) -> str:
    """A share as a percentage to 0.1%, never rounded to a lie: a share above 0 that rounds
    to 0.0% reads "<0.1%", one below 1 that rounds to 100.0% reads ">99.9%"."""
    if 0 < x < 0.0005:
        return "<0.1%"
    if 0.9995 <= x < 1:
        return ">99.9%"
    return pct(x)


def _cmd_odds(args) -> int:
    from .fleet.odds import check_odds  # scipy: loaded by the one command that needs it

    plan = plan_from_args(args)
    odds = check_odds(plan, months=args.months, seed=args.from_seed)  # a bar when long
    if args.json:
        print(_json({
            "plan": plan.to_dict(), "months": odds.months, "first_seed": odds.seed,
            "confidence": odds.confidence, "failures": odds.failures,
            "fail_share": odds.fail_share,
            "interval": {k: list(v) for k, v in odds.interval.items()},
            "signatures": odds.signatures,
        }))
        return 0
    print(f"{_describe(plan)}\nover {odds.months:,} lottery draws (seeds {odds.seed} to "
          f"{odds.seed + odds.months - 1}):\n")
    for name in odds.failures:
        low, high = odds.interval[name]
        print(f"  {name:<12} fails {share(odds.fail_share[name]):>6} of months "
              f"({odds.confidence:.0%} interval {share(low)} to {share(high)})")
    print("\n  signatures: " + ", ".join(f"{k} x {v:,}" for k, v in odds.signatures.items()))
    return 0


def _cmd_examples(args) -> int:
    from .examples import write_examples

    written = write_examples(args.folder, force=args.force)
    print(f"wrote {len(written)} example files to {args.folder}: "
          + ", ".join(p.name for p in written))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="schedatrix", description="One month of one rented GPU pool: "
                     "the bill, the tokens and the three checks.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("month", help="one month of a plan: readout, bill split, verdict")
    _add_knobs(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead")
    p.set_defaults(func=_cmd_month)

    p = sub.add_parser("presets", help="the presets, their knobs and story")
    p.add_argument("--json", action="store_true", help="print JSON instead")
    p.set_defaults(func=_cmd_presets)

    p = sub.add_parser("odds", help="how often each check fails over the lottery")
    _add_knobs(p)
    p.add_argument("--months", type=_number("--months", int), default=10_000, metavar="N",
                   help="lottery draws to run (default 10,000)")
    p.add_argument("--from-seed", type=_number("--from-seed", int), default=0, metavar="S",
                   help="first seed of the draws (default 0)")
    p.add_argument("--json", action="store_true", help="print JSON instead")
    p.set_defaults(func=_cmd_odds)

    p = sub.add_parser("examples", help="copy the example files (fleet note, serving "
                       "scenarios) into a folder of yours")
    p.add_argument("folder", nargs="?", default="examples",
                   help="where to write them (default ./examples)")
    p.add_argument("--force", action="store_true",
                   help="overwrite files there that differ from the examples")
    p.set_defaults(func=_cmd_examples)

    for register in _extensions():
        register(sub)
    return parser


def _extensions():
    """Subcommands that live beside their own modules (audit, course tools)."""
    from .audit.cli import add_audit_parser
    from .classroom.grader.grade_folder import add_grade_parser
    from .classroom.releases.release import add_release_parser
    from .course.apps.serve import add_serve_parser
    from .course.drills.cli import add_drills_parser
    from .serving.cli import add_serving_parser

    return [add_audit_parser, add_serving_parser, add_serve_parser, add_drills_parser,
            add_release_parser, add_grade_parser]


def _mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


def out_of_memory(err: MemoryError) -> str:
    """A failed allocation in one line: how much was asked for (when the error says), what
    the process held, and its address-space limit (ulimit -v) when it has one."""
    asked = getattr(err, "_total_size", None)        # numpy says how large the array was
    if asked is None:
        m = re.search(r"size (\d+)", str(err))      # pyarrow: "malloc of size 302720 failed"
        asked = int(m[1]) if m else None
    text = "out of memory: " + (f"{_mib(asked)} more was needed" if asked else
                                "an allocation failed")
    try:
        with open("/proc/self/statm") as f:
            held = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        text += f", on top of the {_mib(held)} of address space this process held"
    except (OSError, ValueError, IndexError, AttributeError):
        pass
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit != resource.RLIM_INFINITY:
            text += f" (its limit, ulimit -v, is {_mib(limit)})"
    except (ImportError, OSError, ValueError):
        pass
    return text + "; give it more memory, or a smaller input"


def _stop_threads() -> None:
    """Stop the trace readers' threads before the interpreter shuts down (if any ran)."""
    reader = sys.modules.get("schedatrix.traces.reader")
    if reader is not None:
        reader.stop_readers()


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if os.environ.get("SCHEDATRIX_WORKERS"):   # refused before any work starts
            from .serving.studies.acceptance import workers
            workers()
        return args.func(args)
    except InputError as err:
        print(f"schedatrix: error: {err}", file=sys.stderr)
        return 2
    except MemoryError as err:   # numpy's and pyarrow's too
        print(f"schedatrix: error: {out_of_memory(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("schedatrix: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    finally:
        _stop_threads()


if __name__ == "__main__":
    sys.exit(main())
