"""``schedatrix serving emulate`` and ``schedatrix serving bench`` on the command line.

Both read a scenario (or flags) as ``serving run`` does. They need the ``live`` extra; without
it each says in one line which extra to install (exit 2). This module imports without it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

from ...errors import InputError
from ..numbers import positive_arg as _positive
from . import MISSING_EXTRA

__all__ = ["add_live_parsers"]

_EMULATE_NEEDS = ("starlette", "uvicorn", "prometheus_client")
_BENCH_NEEDS = ("httpx", "prometheus_client")
#: Flags of the shared scenario set that mean nothing to the emulator (hidden from its help).
_NOT_FOR_EMULATE = {"rate", "burstiness", "requests", "duration", "input_len", "output_len",
                    "trace", "slo_ttft", "slo_tpot", "runs", "max_runs", "reference",
                    "json", "out", "quiet"}


def need_extra(what: str, modules) -> None:
    """Raise InputError (one line, exit 2) when a module of the live extra is missing."""
    for name in modules:
        if importlib.util.find_spec(name) is None:
            raise InputError(MISSING_EXTRA.format(what=what, missing=name))




class _NotOffered(argparse.Action):
    """A shared scenario flag a command cannot honour: hidden from its help, and refused in
    one line (exit status 2) when given, saying why."""

    def __init__(self, option_strings, dest, why: str, **kw):
        super().__init__(option_strings, dest, **kw)
        self.why = why

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{option_string}: {self.why}")


def _not_offered(parser: argparse.ArgumentParser, dests, why: str) -> None:
    """Replace the flags ``dests`` of ``parser`` by refusals saying ``why``."""
    for action in [a for a in parser._actions if a.dest in dests]:
        parser.add_argument(*action.option_strings, dest=action.dest, default=action.default,
                            nargs=0 if action.nargs == 0 else None, action=_NotOffered,
                            why=why, help=argparse.SUPPRESS)


def _port(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--port must be a whole number, got {text!r}") \
            from None
    if not 0 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"--port must be 0 (a free port) to 65535, got {text!r}")
    return v


def _block_tokens(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--prefix-block-tokens must be a whole number, got {text!r}") from None
    if not 0 <= v <= 1_000_000:
        raise argparse.ArgumentTypeError(
            f"--prefix-block-tokens must be 0 (off) or a block size in tokens, got {text!r}")
    return v


def add_live_parsers(sub, add_scenario_flags, make_scenario, finish) -> None:
    """Add ``emulate`` and ``bench`` to the ``serving`` subcommands. ``serving``'s command line
    hands over its own pieces (this module must not import it back): ``add_scenario_flags(p)``
    adds the design, load and SLO flags, ``make_scenario(args, one_design)`` builds the
    scenario from a file and flags, ``finish(comparisons, scenario, args)`` prints the report
    as ``serving run`` does."""
    _add_scenario_flags = add_scenario_flags
    p = sub.add_parser(
        "emulate", conflict_handler="resolve",
        help="serve a design as an OpenAI-compatible HTTP endpoint, in (scaled) real time",
        description="An OpenAI-compatible server (/v1/completions, /v1/chat/completions, "
                    "/v1/models, /health, /metrics with vLLM's metric names, POST "
                    "/admin/fault) whose replicas are the simulator's: each request queues, "
                    "batches, is preempted and routed as the model says, and its tokens stream "
                    "at the model's times. Needs the live extra. Stops on Ctrl-C or SIGTERM.")
    p.add_argument("scenario", nargs="?", metavar="SCENARIO.toml",
                   help="a scenario file (its design, SLO classes and fault schedule)")
    p.add_argument("--design", metavar="NAME", help="which of the scenario's designs")
    _add_scenario_flags(p)
    _not_offered(p, _NOT_FOR_EMULATE,
                 "serving emulate takes no load, SLO, run or report flag (it serves the "
                 "requests clients send); give it to serving bench, which drives the endpoint")
    g = p.add_argument_group("the server")
    g.add_argument("--host", default="127.0.0.1", help="address to listen on (default "
                                                       "127.0.0.1)")
    g.add_argument("--port", type=_port, default=8000,
                   help="port (default 8000; 0: a free one, printed at start)")
    g.add_argument("--speed", dest="time_speed", type=_positive(float, "--speed"), default=1.0,
                   metavar="X", help="run the model X times faster than real time (default 1)")
    g.add_argument("--served-model-name", metavar="NAME",
                   help="the model name clients send (default: the design's model)")
    g.add_argument("--default-max-tokens", type=_positive(int, "--default-max-tokens"),
                   default=256, metavar="N",
                   help="tokens a chat request gets without max_tokens (default 256)")
    g.add_argument("--prefix-block-tokens", type=_block_tokens, default=0, metavar="N",
                   help="prefix caching on prompt blocks of N tokens (a multiple of the KV "
                        "block, 16; default 0: off)")
    g.add_argument("--shutdown-timeout", type=_positive(float, "--shutdown-timeout"), default=5.0,
                   metavar="SECONDS",
                   help="on Ctrl-C or SIGTERM, streams in flight get this long (default 5)")
    p.set_defaults(func=_cmd_emulate, speed=None, make_scenario=make_scenario)

    p = sub.add_parser(
        "bench", conflict_handler="resolve",
        help="drive any OpenAI-compatible endpoint with the load model; the same report and "
             "verdict as serving run",
        description="Send a scenario's load (open loop at its arrival times, or its closed "
                    "loop of users) to an OpenAI-compatible endpoint, streaming; measure each "
                    "request's TTFT, ITL, TPOT and end-to-end latency as vLLM's bench serve "
                    "does; write the report, JSON and acceptance verdict serve run writes, "
                    "plus every request's figures. Ctrl-C stops it and reports what was "
                    "measured (exit 130). Needs the live extra.")
    p.add_argument("url", metavar="URL", help="the server's root, e.g. http://127.0.0.1:8000")
    p.add_argument("scenario", nargs="?", metavar="SCENARIO.toml", help="a scenario file")
    p.add_argument("--design", metavar="NAME",
                   help="which of the scenario's designs the endpoint runs (its GPUs price "
                        "the tokens)")
    _add_scenario_flags(p)
    _not_offered(p, {"reference", "max_runs"},
                 "serving bench measures the endpoint: it simulates nothing, and makes the "
                 "--runs it is given")
    runs = next(a for a in p._actions if a.dest == "runs")
    runs.help, runs.metavar = "runs of the load on seeds seed, seed+1, ... (default 1)", "N"
    g = p.add_argument_group("the endpoint")
    g.add_argument("--model", dest="served_model", metavar="NAME",
                   help="the model name to send (default: the first of URL/v1/models)")
    g.add_argument("--endpoint", choices=sorted(("completions", "chat")),
                   default="completions",
                   help="completions (prompts as token ids: exact lengths; default) or chat "
                        "(text: approximate lengths)")
    g.add_argument("--time-scale", type=_positive(float, "--time-scale"), default=1.0, metavar="X",
                   help="the endpoint runs X times faster than real time (an emulator with "
                        "--speed X): arrivals are sent X times sooner, times reported x X")
    g.add_argument("--timeout", type=_positive(float, "--timeout"), default=600.0,
                   metavar="SECONDS",
                   help="a request with no end after this long is an error (default 600)")
    g.add_argument("--api-key", metavar="KEY", help="sent as a bearer token")
    g.add_argument("--no-warmup", dest="warmup", action="store_false",
                   help="skip the short request sent (and not measured) before the load, as "
                        "vLLM's bench serve sends its test prompt first")
    p.set_defaults(func=_cmd_bench, model=None, make_scenario=make_scenario, finish=finish)

    p = sub.add_parser(
        "measured", conflict_handler="resolve",
        help="a benchmark's per-request results beside the simulation of the same "
             "load; --load-out writes the load as a client's input",
        description="Read per-request results (serving bench's --out folder or requests.json; "
                    "vLLM's bench serve --save-result --save-detailed JSON; AIPerf's "
                    "profile_export.jsonl; GuideLLM's benchmarks.json) and show p50/p95 "
                    "TTFT, ITL, TPOT, goodput and SLO attainment, overall and per class, beside "
                    "serving run's of the scenario's load on its design, with the distance "
                    "(measured / simulated - 1). --load-out FILE writes the scenario's load as "
                    "a Mooncake trace (timestamp ms, input_length, output_length, hash_ids) "
                    "that AIPerf replays on a fixed schedule; RESULTS may then be left out. "
                    "Needs no extra.")
    p.add_argument("results", nargs="?", metavar="RESULTS",
                   help="a results file or a client's output folder")
    p.add_argument("scenario", nargs="?", metavar="SCENARIO.toml",
                   help="the load and design that were measured")
    p.add_argument("--design", metavar="NAME", help="which of the scenario's designs")
    p.add_argument("--benchmark", type=_positive(int, "--benchmark"), metavar="N",
                   help="which benchmark of a GuideLLM report (1 = its first; needed when it "
                        "holds several, a sweep)")
    p.add_argument("--load-out", metavar="FILE",
                   help="write the scenario's load as a Mooncake trace (JSON lines) for "
                        "AIPerf's --custom-dataset-type mooncake_trace --fixed-schedule")
    _add_scenario_flags(p)
    _not_offered(p, {"runs", "max_runs", "quiet"},
                 "serving measured compares the results with one simulated run (--seed), "
                 "and shows no progress bar")
    next(a for a in p._actions if a.dest == "out").help = (
        "write report.md (the table printed) and result.json (the --json object)")
    p.set_defaults(func=_cmd_measured, make_scenario=make_scenario)

    p = sub.add_parser(
        "calibrate", conflict_handler="resolve",
        help="fit the model's host and front-end terms to measured per-request results; write "
             "a --calibration file",
        description="Replay each results file's completed requests (serving bench's, AIPerf's "
                    "profile_export.jsonl, GuideLLM's benchmarks.json: files with send times) "
                    "on the design that was measured, fit the host's time per iteration to "
                    "their TPOT and the front end and tokenization to their TTFT, print the "
                    "fit's error on held-out rows (every --held-out-every-th), and write the "
                    "terms to --out, which --calibration loads in every serving command. "
                    "Needs no extra.")
    p.add_argument("inputs", nargs="+", metavar="RESULTS",
                   help="results files or folders (and at most one SCENARIO.toml: the design "
                        "measured)")
    p.add_argument("--design", metavar="NAME", help="which of the scenario's designs")
    p.add_argument("--benchmark", type=_positive(int, "--benchmark"), metavar="N",
                   help="which benchmark of a GuideLLM report (1 = its first)")
    p.add_argument("--held-out-every", type=_positive(int, "--held-out-every"), default=4,
                   metavar="K", help="hold every K-th request out of the fit to report its "
                                     "error (default 4; at least 2)")
    _add_scenario_flags(p)
    p.add_argument("--out", metavar="CAL.toml", required=True,
                   help="the calibration file to write")
    p.set_defaults(func=_cmd_calibrate, make_scenario=make_scenario, scenario=None)


# -- emulate ------------------------------------------------------------------------------------

def _cmd_emulate(args) -> int:
    need_extra("emulate", _EMULATE_NEEDS)
    from .driver import Driver
    from .server import Emulator, bind, serve
    scenario = args.make_scenario(args, one_design=True)
    design = scenario.designs[0]
    driver = Driver(design, classes=scenario.load.classes, faults=scenario.faults,
                    resilience=scenario.resilience, seed=scenario.seed,
                    prefix_block_tokens=args.prefix_block_tokens)
    name = args.served_model_name or design.model
    sock = bind(args.host, args.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    faults = f"; faults {', '.join(f.text() for f in scenario.faults)}" if scenario.faults \
        else ""

    def ready():
        print(f"emulating {design.name} ({design.gpus} GPU{'s' if design.gpus != 1 else ''}) "
              f"as {name!r} on http://{shown}:{port} at {args.time_speed:g}x real "
              f"time{faults}", flush=True)

    def factory():
        return Emulator(driver, name, args.time_speed, args.default_max_tokens,
                        args.prefix_block_tokens)

    serve(factory, sock, args.shutdown_timeout, on_ready=ready)
    print("emulator stopped", flush=True)
    return 0


# -- bench --------------------------------------------------------------------------------------

def _cmd_bench(args) -> int:
    need_extra("bench", _BENCH_NEEDS)
    import asyncio

    from tqdm import tqdm

    from ..studies.acceptance import Outcome
    from ..studies.acceptance import _add as add_run  # a run's figures, as evaluate adds them
    from ..studies.compare import Comparison
    from .bench import Bench
    from .measure import as_run, rows
    if not args.url.startswith(("http://", "https://")):
        raise InputError(f"URL must start with http:// or https://, got {args.url!r}")
    if args.runs == "auto":
        raise InputError("--runs auto: a bench makes the runs it is given (a whole number)")
    scenario = args.make_scenario(args, one_design=True)
    design = scenario.designs[0]
    model = args.served_model or _first_model(args.url, args.api_key)
    make = scenario.make_requests()
    runs = scenario.runs if isinstance(scenario.runs, int) else 1
    first = make(scenario.seed)
    outcome = Outcome(design, first.classes, scenario.criteria, first.synthetic,
                      seed=scenario.seed)
    per_request, measured_runs, interrupted = [], [], False
    for k in range(runs):
        req = first if k == 0 else make(scenario.seed + k)
        bar = tqdm(total=len(req), desc=f"bench run {k + 1}/{runs}" if runs > 1 else "bench",
                   unit="req", disable=args.json or args.quiet, file=sys.stderr,
                   mininterval=0.5)
        bench = Bench(args.url, req, model, args.endpoint, args.time_scale, args.timeout,
                      scenario.seed + k, args.api_key, on_done=lambda m, bar=bar: bar.update(),
                      warmup=k == 0 and args.warmup)
        try:
            asyncio.run(bench.run())
        except KeyboardInterrupt:
            interrupted = True
            bench.stop()
        finally:
            bar.close()
        if bench.warmup_error is not None:
            raise InputError(f"URL {args.url}: the warm-up request (model {model!r}) failed, "
                             f"so the load was not sent: {bench.warmup_error}")
        run = as_run(req, bench.measured, args.time_scale, bench.kv_peak or 0.0)
        add_run(outcome, run)
        if k == 0:
            from ..figures.metrics import time_series
            outcome.series = time_series(run)
        per_request.append(rows(bench.measured, args.time_scale))
        measured_runs.append({"seed": scenario.seed + k, "counts": bench.counts,
                              "kv_peak_share": bench.kv_peak,
                              "preemptions": bench.preemptions})
        if interrupted:
            break
    comparisons = {design.model: Comparison([outcome], model=design.model)}
    info = {"url": args.url, "model": model, "endpoint": args.endpoint,
            "time_scale": args.time_scale, "interrupted": interrupted,
            "runs": measured_runs,
            "kv_peak_measured": all(r["kv_peak_share"] is not None for r in measured_runs),
            "definitions": "vLLM bench serve: TTFT to the first chunk with text, ITL between "
                           "such chunks, e2e to the last, TPOT (e2e - TTFT) / (output tokens "
                           "- 1); seconds x time_scale. A client sees no queue time (null) "
                           "and no preemption per request (0 in designs); runs[].preemptions "
                           "is the growth of the endpoint's vllm:num_preemptions counter, "
                           "runs[].kv_peak_share the highest vllm:kv_cache_usage_perc scraped "
                           "once a wall second (null: the endpoint shows neither)"}
    if args.out:
        from ..reports.report import write_report
        write_report(comparisons, scenario, args.out)
        out = Path(args.out)
        (out / "bench.json").write_text(json.dumps(info, indent=1, allow_nan=False))
        (out / "requests.json").write_text(json.dumps(per_request, allow_nan=False))
    if args.json:
        from ..reports.report import comparison_json
        data = comparison_json(comparisons, scenario)
        data["bench"] = info
        data["requests"] = per_request
        print(json.dumps(data, allow_nan=False))
    else:
        c = {state: sum(r["counts"][state] for r in measured_runs)
             for state in measured_runs[0]["counts"]}
        runs_text = f" over {len(measured_runs)} runs" if len(measured_runs) > 1 else ""
        print(f"bench: {args.url} as {model!r} ({args.endpoint}){runs_text}; "
              f"{c['ok']:,} completed, "
              f"{c['error']:,} errors, {c['unfinished']:,} unfinished, {c['not sent']:,} "
              f"not sent" + (" (interrupted)" if interrupted else ""))
        if args.out:
            args.finish(comparisons, scenario, argparse.Namespace(out=None, json=False))
            print(f"report: {Path(args.out) / 'report.md'}")
        else:
            args.finish(comparisons, scenario, args)
    return 130 if interrupted else 0


def _first_model(url: str, api_key: str | None) -> str:
    import httpx
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        resp = httpx.get(url.rstrip("/") + "/v1/models", headers=headers, timeout=10.0)
        data = resp.json()["data"]
        return str(data[0]["id"])
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as err:
        raise InputError(f"--model not given and {url}/v1/models did not name one "
                         f"({type(err).__name__}); give --model NAME") from None


# -- measured -----------------------------------------------------------------------------------

def _positionals(args) -> None:
    """``measured --load-out FILE SCENARIO.toml``: one positional is then the scenario."""
    if args.load_out and args.scenario is None and args.results is not None and \
            str(args.results).endswith(".toml"):
        args.scenario, args.results = args.results, None
    if args.results is None and not args.load_out:
        raise InputError("RESULTS: a results file or folder is needed (or --load-out FILE to "
                         "write the scenario's load)")


def _cmd_measured(args) -> int:
    from ..figures.metrics import figures
    from ..sim.simulate import simulate
    from .results import COMPARED, compare, measured_figures, read_results
    _positionals(args)
    results = read_results(args.results, args.benchmark) if args.results else None
    scenario = args.make_scenario(args, one_design=True)
    design = scenario.designs[0]
    req = scenario.make_requests()(scenario.seed)
    written = None
    if args.load_out:
        from .load_out import write_mooncake
        written = {"file": str(args.load_out), "requests": write_mooncake(req, args.load_out),
                   "format": "mooncake", "classes_merged": len(req.classes)
                   if len(req.classes) > 1 else None}
        if not args.json:
            merged = (f"; its {len(req.classes)} SLO classes merged (a trace has none)"
                      if len(req.classes) > 1 else "")
            print(f"load: {written['requests']:,} requests written to {args.load_out} "
                  f"(Mooncake trace){merged}")
            print(f"  replay: aiperf profile --input-file {args.load_out} "
                  "--custom-dataset-type mooncake_trace --fixed-schedule ...")
        if results is None:
            if args.json:
                print(json.dumps({"load_out": written}, allow_nan=False))
            return 0
    run = simulate(req, design, scenario.implementation, scenario.faults, scenario.resilience)
    classes = req.classes
    names = ["all", *(c.name for c in classes)]
    sim = [figures(run, c).as_dict() for c in (None, *range(len(classes)))]
    meas = measured_figures(results, classes)
    rows = {name: compare(m, x) for name, m, x in zip(names, meas, sim, strict=True)}
    note = ""
    if len(results.measured) != len(req):
        note = (f"measured {len(results.measured):,} requests, the scenario's load has "
                f"{len(req):,}: not the same load")
    data = {"results": results.source, "format": results.format, "design": design.name,
            "load": scenario.load.describe(), "synthetic": req.synthetic,
            "measured_requests": len(results.measured), "simulated_requests": len(req),
            "note": note or None, "compared": rows,
            "distance": "measured / simulated - 1"}
    if written:
        data["load_out"] = written
    lines = [f"measured: {results.source} ({results.format}, "
             f"{len(results.measured):,} requests)",
             f"simulated: {design.name} on {scenario.load.describe()}"]
    if note:
        lines.append(f"note: {note}")
    for name in names if len(classes) > 1 else names[:1]:
        lines += ["", f"{name}:" if name != "all" else "all requests:",
                  f"  {'figure':15s} {'measured':>12s} {'simulated':>12s} {'distance':>9s}"]
        for k in COMPARED:
            r = rows[name][k]
            lines.append(f"  {k:15s} {_fmt(k, r['measured']):>12s} "
                         f"{_fmt(k, r['simulated']):>12s} "
                         f"{'-' if r['distance'] is None else format(r['distance'], '+.0%'):>9s}")
    if args.out:
        from ..reports.measured_report import write_measured_report
        report = write_measured_report(args.out, data, lines)[0]
    if written and not args.json:
        print()
    print(json.dumps(data, allow_nan=False) if args.json else "\n".join(lines))
    if args.out and not args.json:
        print(f"report: {report}")
    return 0


def _observed(results):
    """A results file's completed requests with send times, for the fit."""
    import numpy as np

    from ..studies.calibrate import Observed
    from .measure import OK
    if results.duration_s is not None:
        raise InputError(f"RESULTS {results.source}: vLLM's bench serve result has no send "
                         "times, so its requests cannot be replayed; calibrate from serving "
                         "bench's, AIPerf's or GuideLLM's results")
    ms = [m for m in results.measured if m.state == OK and m.sent_s == m.sent_s]

    def col(f):
        return np.array([f(m) for m in ms], dtype=float)

    return Observed(results.source, col(lambda m: m.sent_s), col(lambda m: m.prompt_tokens),
                    col(lambda m: m.output_tokens), col(lambda m: m.ttft_s),
                    col(lambda m: m.tpot_s))


def _cmd_calibrate(args) -> int:
    from ..intake.calibration_file import calibration_toml
    from ..studies.calibrate import calibrate
    from .results import read_results
    tomls = [x for x in args.inputs if str(x).endswith(".toml")]
    if len(tomls) > 1:
        raise InputError(f"SCENARIO.toml: at most one scenario, got {', '.join(tomls)}")
    args.scenario = tomls[0] if tomls else None
    files = [x for x in args.inputs if x not in tomls]
    if not files:
        raise InputError("RESULTS: at least one results file or folder is needed")
    if args.held_out_every < 2:
        raise InputError(f"--held-out-every must be at least 2, got {args.held_out_every}")
    out = Path(args.out)
    if out.is_dir():
        raise InputError(f"--out {args.out!r}: a folder; give a file name (cal.toml)")
    results = [read_results(x, args.benchmark) for x in files]
    scenario = args.make_scenario(args, one_design=True)
    design = scenario.designs[0]
    sources = ", ".join(r.source for r in results)
    fit = calibrate([_observed(r) for r in results], design, args.held_out_every,
                    scenario.implementation, source=sources)
    cal = fit.calibration
    about = {"fitted_to": sources, "design": f"{design.model} on {design.gpu}, "
             f"{design.label()}", "engine": design.engine,
             "async_scheduling": design.async_on()}
    try:
        out.write_text(calibration_toml(cal, about))
    except OSError as err:
        raise InputError(f"--out {args.out!r}: cannot write ({err.strerror})") from None
    given, host = design.client(), design.perf().host
    terms = {"host_step_s": [cal.host_step_s, host.step_s],
             "front_end_s": [cal.client_path.front_end_s, given.front_end_s + given.egress_s],
             "tokenize_s_per_token": [cal.client_path.tokenize_s_per_token,
                                      given.tokenize_s_per_token]}
    if args.json:
        print(json.dumps({"calibration": str(out), "terms": {
            k: {"fitted": a, "design": b} for k, (a, b) in terms.items()},
            "errors": fit.errors, "rows": fit.rows, "held_out_rows": fit.held_out,
            "notes": list(fit.notes)}, allow_nan=False))
        return 0
    print(f"calibrated {design.model} on {design.gpu} ({design.label()}) to "
          f"{fit.rows + fit.held_out:,} requests of {len(results)} file(s)")
    print(f"  {'term':22s} {'fitted':>10s} {'design':>10s}")
    for k, (a, b) in terms.items():
        scale, unit = (1e6, "us") if k.endswith("per_token") else (1e3, "ms")
        text = "-" if a is None else f"{a * scale:.3g} {unit}"
        print(f"  {k:22s} {text:>10s} {b * scale:>7.3g} {unit}")
    e = fit.errors
    print(f"error on {fit.held_out:,} held-out requests (median |simulated / measured - 1|):")
    for k in ("ttft", "tpot"):
        a, b = e[f"{k}_held_out_before"], e[f"{k}_held_out_after"]
        print(f"  {k.upper()}: {_pct(a)} with the design's terms, {_pct(b)} calibrated")
    for note in fit.notes:
        print(f"note: {note}")
    print(f"written: {out} (load it with --calibration {out})")
    return 0


def _pct(x) -> str:
    return "-" if x is None else f"{x:.1%}"


def _fmt(key: str, v) -> str:
    if v is None:
        return "-"
    if key in ("completed", "failed"):
        return f"{int(v):,}"
    if key == "slo_attainment":
        return f"{v:.1%}"
    if key == "goodput_rps":
        return f"{v:.3g}/s"
    return f"{v * 1000:,.1f} ms"
