"""``schedatrix serving run|compare|fit``: the serving simulator on the command line.

A scenario file (TOML, :mod:`.scenario`) or flags describe the load and the designs; flags
override the file. Bad input raises :class:`~schedatrix.errors.InputError`, which the
command line prints as one line with exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tqdm import tqdm

from ..errors import InputError
from ..text import wrap
from .cluster.restart import WEIGHT_SOURCES
from .cluster.routing import ROUTERS
from .intake.toml_tables import out_folder
from .numbers import positive_arg as _positive
from .perf.catalog import DTYPES, GPUS, MODELS
from .perf.engines import DEFAULT_ENGINE, ENGINES
from .perf.spec_decode import SPEC_METHODS

__all__ = ["add_serving_parser"]

#: Exit statuses of the commands that end in a verdict (``serving plan``, ``serving accept``):
#: 0 a yes (a placement fits, a design is chosen), 1 a no (nothing fits; no design accepted,
#: refused or still undecided); bad input exits 2, as everywhere.
VERDICT_YES, VERDICT_NO = 0, 1


def _expert_skew(text):
    """--expert-skew: a finite number >= 0 (its upper bound depends on the model: Design)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--expert-skew must be a number, got {text!r}") from None
    if not 0 <= v < float("inf"):
        raise argparse.ArgumentTypeError(f"--expert-skew must be 0 or more, got {text!r}")
    return v


def _engine(text):
    """--engine: one of the engine profiles."""
    if text not in ENGINES:
        raise argparse.ArgumentTypeError(f"--engine must be one of {', '.join(ENGINES)}, "
                                         f"got {text!r}")
    return text


def _on_off(flag):
    def parse(text):
        if text not in ("on", "off"):
            raise argparse.ArgumentTypeError(f"{flag} must be on or off, got {text!r}")
        return text == "on"
    return parse


def _runs_arg(text):
    """--runs: a whole number above 0, or auto."""
    if text.strip().lower() == "auto":
        return "auto"
    return _positive(int, "--runs")(text)


def _in_range(flag, low: float, high: float, why: str = ""):
    """A flag's number from ``low`` to ``high`` (``why``: what it is, in the refusal)."""
    def parse(text):
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} must be a number, got {text!r}") from None
        if not low <= v <= high:
            raise argparse.ArgumentTypeError(f"{flag} must be from {low:g} to {high:g}{why}, "
                                             f"got {text!r}")
        return v
    return parse


def _lora_int(flag, low: int):
    """A LoRA flag's whole number, at least ``low``."""
    def parse(text):
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} must be a whole number, got "
                                             f"{text!r}") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"{flag} must be at least {low}, got {text!r}")
        return v
    return parse


def _at_least_zero(flag, high=1000):
    return _in_range(flag, 0, high)


def _add_scenario_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("the design (override the scenario's [defaults])")
    g.add_argument("--model", choices=sorted(MODELS), help="model (default llama-3.1-8b)")
    g.add_argument("--gpu", choices=sorted(GPUS), help="GPU type (default a100-80gb)")
    g.add_argument("--tp", type=_positive(int, "--tp"), help="tensor-parallel degree")
    g.add_argument("--pp", type=_positive(int, "--pp"), help="pipeline stages")
    g.add_argument("--replicas", type=_positive(int, "--replicas"),
                   help="replicas behind a round-robin router (data parallelism)")
    g.add_argument("--prefill-replicas", type=_positive(int, "--prefill-replicas"),
                   help="prefill replicas of a prefill/decode split")
    g.add_argument("--decode-replicas", type=_positive(int, "--decode-replicas"),
                   help="decode replicas of a prefill/decode split")
    g.add_argument("--max-batch", type=_positive(int, "--max-batch"),
                   help="running requests per scheduler at most (default: the engine's for "
                        "the GPU; vllm serve: 1024 on H100/H200, 256 elsewhere)")
    g.add_argument("--max-batched-tokens", type=_positive(int, "--max-batched-tokens"),
                   help="tokens per iteration at most (default: the engine's for the GPU; "
                        "vllm serve: 8192 on H100/H200, 2048 elsewhere)")
    g.add_argument("--engine", type=_engine, metavar="NAME",
                   help=f"the serving engine and version ({', '.join(ENGINES)}; default "
                        f"{DEFAULT_ENGINE}): scheduler, preemption, async scheduling, "
                        "batch defaults, host costs (docs/serving-calibration.md)")
    g.add_argument("--async-scheduling", type=_on_off("--async-scheduling"),
                   metavar="on|off",
                   help="overlap the host's scheduling with the GPU's step (default: the "
                        "engine's; vllm-0.14 on)")
    g.add_argument("--chunked-prefill", dest="chunked_prefill", action="store_true",
                   default=None, help="split long prompts over iterations (default)")
    g.add_argument("--no-chunked-prefill", dest="chunked_prefill", action="store_false",
                   help="prefill each prompt whole in one iteration")
    g.add_argument("--price", type=_positive(float, "--price"), metavar="DOLLARS",
                   help="price per GPU-hour (default: the catalog's stated price)")
    g.add_argument("--router", choices=sorted(ROUTERS),
                   help="how requests pick a replica (default round-robin)")
    g.add_argument("--priority-preemption", dest="priority_preemption", action="store_true",
                   default=None, help="a higher class preempts running lower-class requests")
    g.add_argument("--cuda-graphs", choices=("on", "off"),
                   help="replay captured CUDA graphs for batches up to 512 tokens (on, vLLM's "
                        "default) or launch every kernel from the host (off: enforce_eager)")
    g.add_argument("--host-ms", type=_at_least_zero("--host-ms"), metavar="MS",
                   help="host time per scheduler iteration, milliseconds (default: vLLM's, "
                        "docs/serving-calibration.md)")
    g.add_argument("--calibration", metavar="CAL.toml",
                   help="the host and front-end terms serving calibrate fitted to your "
                        "measurements, on every design (--host-ms still overrides its host)")
    g.add_argument("--prefill-tp", type=_positive(int, "--prefill-tp"),
                   help="tensor parallelism of a split's prefill replicas (default --tp)")
    g.add_argument("--decode-tp", type=_positive(int, "--decode-tp"),
                   help="tensor parallelism of a split's decode replicas (default --tp)")
    g.add_argument("--prefill-gpu", choices=sorted(GPUS),
                   help="GPU of a split's prefill replicas (default --gpu)")
    g.add_argument("--decode-gpu", choices=sorted(GPUS),
                   help="GPU of a split's decode replicas (default --gpu)")
    g.add_argument("--dtype", choices=sorted(DTYPES),
                   help="weights and KV cache: bf16 (default) or fp8 (H100, H200, L4)")
    g.add_argument("--ep", type=_positive(int, "--ep"),
                   help="expert parallelism of a mixture-of-experts model: 1 or --tp")
    g.add_argument("--expert-skew", type=_expert_skew, metavar="S",
                   help="routing skew of a mixture-of-experts model: the Zipf exponent of its "
                        "experts' popularity, 0 (default) uniform; refused for a dense model")
    g.add_argument("--spec-method", choices=SPEC_METHODS,
                   help="speculative decoding: none (default), ngram, eagle or draft")
    g.add_argument("--spec-tokens", type=_positive(int, "--spec-tokens"), metavar="K",
                   help="tokens drafted a step (default: the method's)")
    g.add_argument("--spec-accept", metavar="A", type=_in_range(
                       "--spec-accept", 0, 1, " (the chance a drafted token is accepted)"),
                   help="chance a drafted token is accepted, 0 to 1 (default: the method's)")
    g.add_argument("--draft-model", choices=sorted(MODELS),
                   help="the model that drafts, with --spec-method draft")
    g.add_argument("--kv-offload-gb", type=_at_least_zero("--kv-offload-gb", 100_000),
                   metavar="GB",
                   help="a CPU tier for the prefix cache: GB of host memory per replica that "
                        "keeps blocks evicted from HBM, copied back over PCIe on a hit "
                        "(default 0: off)")
    g.add_argument("--lora-adapters", type=_lora_int("--lora-adapters", 0), metavar="N",
                   help="LoRA adapters served on the base model, every request using one "
                        "(default 0: none)")
    g.add_argument("--lora-rank", type=_lora_int("--lora-rank", 1), metavar="R",
                   help="the adapters' rank, vLLM's max_lora_rank: 1, 8, 16 (default), 32, 64, "
                        "128, 256, 320 or 512")
    g.add_argument("--max-loras", type=_lora_int("--max-loras", 1), metavar="M",
                   help="adapter slots in HBM: at most M distinct adapters a batch (default 1)")
    g.add_argument("--max-cpu-loras", type=_lora_int("--max-cpu-loras", 1), metavar="C",
                   help="adapters kept in host memory, at least M (default M)")
    g.add_argument("--lora-skew", type=_in_range("--lora-skew", 0, 10, " (a Zipf exponent)"),
                   metavar="S", help="the adapters' popularity: Zipf exponent, 0 (default) "
                                     "uniform")
    g.add_argument("--lora-targets", choices=("all", "attention"),
                   help="the modules the adapters adapt: every linear layer (all, default) or "
                        "the attention's qkv and o projections")
    g.add_argument("--lora-by-class", dest="lora_by_class", action="store_true", default=None,
                   help="each SLO class (a tenant) uses its own adapter, class c adapter c "
                        "(default: adapters drawn by --lora-skew)")
    g = p.add_argument_group("faults (run and accept)")
    g.add_argument("--fault", action="append", default=[], metavar="SPEC",
                   help="worker:REPLICA@T+DOWN, node:NODE@T+DOWN, link:NODE@T+DOWN[:SLOWDOWN] "
                        "or drain:REPLICA@T[+DOWN] (seconds; repeat for several)")
    g.add_argument("--health-check", type=float, metavar="SECONDS",
                   help="how long the router takes to notice a crash (default 5)")
    g.add_argument("--retry-budget", type=int, metavar="N",
                   help="retries a request gets after crashes (default 3)")
    g.add_argument("--weights-from", choices=list(WEIGHT_SOURCES),
                   help="where a restarted replica reads its weights: page-cache (5 GB/s a "
                        "GPU), disk (2, the default) or network (0.5)")
    g.add_argument("--weight-load-gb-s", type=_positive(float, "--weight-load-gb-s"),
                   metavar="GB_S", help="a restarted replica reads its weights at this rate "
                                        "a GPU instead of --weights-from's")
    g = p.add_argument_group("the load (override the scenario's [load])")
    g.add_argument("--rate", type=_positive(float, "--rate"), metavar="RPS",
                   help="requests per second (Poisson, or gamma with --burstiness)")
    g.add_argument("--burstiness", type=_positive(float, "--burstiness"),
                   help="gamma shape of the gaps: 1 = Poisson, below 1 burstier")
    g.add_argument("--requests", type=_positive(int, "--requests"), help="how many requests")
    g.add_argument("--duration", type=_positive(float, "--duration"), metavar="SECONDS",
                   help="arrivals for this long")
    g.add_argument("--input-len", metavar="SPEC",
                   help="prompt tokens: N, uniform:A-B, lognormal:MEDIAN,SIGMA or exp:MEAN")
    g.add_argument("--output-len", metavar="SPEC", help="output tokens, same grammar")
    g.add_argument("--trace", metavar="FILE",
                   help="replay a request trace (Azure, Mooncake, BurstGPT, generic)")
    g.add_argument("--speed", type=_positive(float, "--speed"),
                   help="replay the trace this many times faster")
    g = p.add_argument_group("the SLOs and the runs")
    g.add_argument("--slo-ttft", type=_positive(float, "--slo-ttft"), metavar="SECONDS",
                   help="TTFT threshold of every class")
    g.add_argument("--slo-tpot", type=_positive(float, "--slo-tpot"), metavar="SECONDS",
                   help="TPOT threshold of every class")
    g.add_argument("--runs", type=_runs_arg, metavar="N|auto",
                   help="repeated runs on seeds seed, seed+1, ... (default 1); auto: double "
                        "them until the decision is made, at most --max-runs")
    g.add_argument("--max-runs", type=_positive(int, "--max-runs"), metavar="N",
                   help="the cap on runs with --runs auto (default 60)")
    g.add_argument("--seed", type=int, help="first seed (default 0)")
    g.add_argument("--reference", action="store_true",
                   help="use the plain reference simulator (every iteration; slow)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead")
    p.add_argument("--out", metavar="DIR", type=out_folder,
                   help="write report.md, PNG plots and result.json")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def add_serving_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``serving`` (run, compare, fit) to an argparse subparsers object."""
    top = subparsers.add_parser(
        "serving", help="the serving simulator: TTFT, ITL, goodput of candidate designs",
        description="Simulate LLM serving designs on a load: p50/p95 time to first token and "
                    "inter-token latency, goodput and queue time, side by side, with a "
                    "verdict against the SLOs.")
    sub = top.add_subparsers(dest="serving_command", metavar="WHAT",
                             parser_class=type(top))
    sub.required = True
    p = sub.add_parser("run", help="one design on a load",
                       description="Serve a load on one design (a scenario's first, or "
                                   "--design NAME, or the flags alone).")
    p.add_argument("scenario", nargs="?", metavar="SCENARIO.toml", help="a scenario file")
    p.add_argument("--design", metavar="NAME", help="which of the scenario's designs")
    _add_scenario_flags(p)
    p.set_defaults(func=_cmd_run)
    p = sub.add_parser("compare", help="a scenario's designs side by side",
                       description="Run every design of a scenario on the same arrivals, "
                                   "tabulate every figure with GPUs and cost, and name the "
                                   "cheapest that meets the SLOs.")
    p.add_argument("scenario", metavar="SCENARIO.toml", help="a scenario file")
    p.add_argument("--models", metavar="M1,M2,...",
                   help="repeat the designs for each model (how the answer moves)")
    p.add_argument("--no-capacity", dest="capacity", action="store_false",
                   help="skip the search of each design's goodput (DistServe's: the highest "
                        "rate at which the acceptance share meets every SLO)")
    _add_scenario_flags(p)
    p.set_defaults(func=_cmd_compare)
    p = sub.add_parser("accept", help="acceptance: designs over seeds and faults, a decision "
                                      "record and a runbook",
                       description="Run a scenario's designs over seeds, without and with its "
                                   "fault schedule, judge them by the acceptance criteria, and "
                                   "write the decision record and the operations and recovery "
                                   "runbook (Markdown, PNG, JSON) into --out. Exit status 0 "
                                   "when a design is chosen, 1 when none is accepted (refused "
                                   "or undecided), 2 on bad input.")
    p.add_argument("scenario", metavar="SCENARIO.toml", help="a scenario file")
    _add_scenario_flags(p)
    next(a for a in p._actions if a.dest == "out").help = (
        "write decision-record.md, runbook.md and accept.json, and a PNG plot (recovery.png) "
        "when the scenario has faults (default: accept-report)")
    p.set_defaults(func=_cmd_accept, out_default="accept-report")
    p = sub.add_parser("isolation", help="the noisy neighbour: one tenant bursts; each "
                                         "tenant's figures without and with isolation",
                       description="Two tenants share a design; one bursts to --burst times "
                                   "its rate. Each tenant's p95 TTFT and goodput, without and "
                                   "with the isolation features (priority, a token bucket on "
                                   "the noisy tenant, shedding by estimated TTFT).")
    g = p.add_argument_group("the design")
    g.add_argument("--model", choices=sorted(MODELS), default="llama-3.1-8b")
    g.add_argument("--gpu", choices=sorted(GPUS), default="a100-80gb")
    g.add_argument("--tp", type=_positive(int, "--tp"), default=1)
    g.add_argument("--replicas", type=_positive(int, "--replicas"), default=2)
    g = p.add_argument_group("the tenants")
    g.add_argument("--rate", type=_positive(float, "--rate"), default=3.0,
                   help="each tenant's usual requests/s (default 3)")
    g.add_argument("--burst", type=_positive(float, "--burst"), default=5.0,
                   help="the noisy tenant's rate multiplier during its burst (default 5)")
    g.add_argument("--runs", type=_positive(int, "--runs"), default=1)
    g.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON object instead")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_isolation)
    p = sub.add_parser("capacity", help="DistServe's goodput: the highest rate a design serves "
                                        "with a share of requests within every SLO",
                       description="Search the highest request rate at which --attainment of "
                                   "the requests meet every SLO (--slo-ttft, --slo-tpot) on one "
                                   "design (a scenario's first, --design NAME, or the flags), "
                                   "the load's lengths and burstiness kept, and that rate per "
                                   "GPU (DistServe's goodput). Each rate runs at steady state: "
                                   "--requests (at least 1,000) is where its run starts, "
                                   "lengthened until the queue settles. A --trace is scaled by "
                                   "time-compressing its arrivals; a fitted profile (bursts) "
                                   "keeps its shape.")
    p.add_argument("scenario", nargs="?", metavar="SCENARIO.toml", help="a scenario file")
    p.add_argument("--design", metavar="NAME", help="which of the scenario's designs")
    p.add_argument("--attainment", type=_share("--attainment"), default=0.9, metavar="SHARE",
                   help="share of requests that must meet every SLO (default 0.9)")
    p.add_argument("--no-drift", dest="drift", action="store_false",
                   help="drop the load's drift (bursts; a trace becomes its fitted twin at one "
                        "rate), to compare with the drift kept")
    _add_scenario_flags(p)
    p.set_defaults(func=_cmd_capacity)
    p = sub.add_parser("fit", help="a trace's figures and a synthetic load that reproduces them")
    p.add_argument("trace", metavar="TRACE", help="a request trace")
    p.add_argument("--window", type=_positive(float, "--window"), default=60.0,
                   metavar="SECONDS", help="window for the rate over time (default 60)")
    p.add_argument("--lengths", choices=("paired", "lognormal"), default="paired",
                   help="synthetic lengths: drawn paired from the trace, or fitted lognormals")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic run")
    p.add_argument("--json", action="store_true", help="print one JSON object instead")
    p.set_defaults(func=_cmd_fit)
    p = sub.add_parser("plan", help="several models on one pool of GPUs: the cheapest "
                                    "placement meeting every model's SLOs",
                       description="Place every model of a pool file on its GPUs: per model "
                                   "the replicas x TP x PP (or a split) that meet its SLOs, "
                                   "found by simulation and DistServe's goodput search, the "
                                   "cheapest combination within the GPU count, each model's "
                                   "headroom and which breaks first; or why nothing fits and "
                                   "the smallest count that would. Exit status 0 when a "
                                   "placement fits, 1 when none does, 2 on bad input.")
    p.add_argument("pool", metavar="POOL.toml", help="a pool file (schedatrix/examples/"
                                                     "serving-plan.toml)")
    p.add_argument("--gpus", type=_positive(int, "--gpus"), metavar="N",
                   help="GPUs in the pool instead of the file's count (one kind)")
    p.add_argument("--no-drift", dest="drift", action="store_false", default=None,
                   help="plan a trace's model without its per-minute profile (drift = false)")
    p.add_argument("--calibration", metavar="CAL.toml",
                   help="put a calibration's host step and client path (serving calibrate "
                        "--out) on every design the planner tries")
    p.add_argument("--json", action="store_true", help="print one JSON object instead")
    p.add_argument("--quiet", action="store_true", help="no progress")
    p.set_defaults(func=_cmd_plan)
    from .sweeps.sweep_cli import add_sweep_parser  # sweep: its own module
    add_sweep_parser(sub)
    from .live.live_cli import add_live_parsers  # emulate, bench: theirs
    add_live_parsers(sub, _add_scenario_flags, _scenario, _finish)
    return top


# -- building the scenario ----------------------------------------------------------------------

_DESIGN_FLAGS = {"model": "model", "gpu": "gpu", "tp": "tp", "pp": "pp", "replicas": "replicas",
                 "prefill_replicas": "prefill_replicas", "decode_replicas": "decode_replicas",
                 "max_batch": "max_batch", "max_batched_tokens": "max_batched_tokens",
                 "chunked_prefill": "chunked_prefill", "price": "price_per_gpu_hour",
                 "router": "router", "priority_preemption": "priority_preemption",
                 "cuda_graphs": "cuda_graphs", "host_ms": "host_ms", "prefill_tp": "prefill_tp",
                 "decode_tp": "decode_tp", "prefill_gpu": "prefill_gpu",
                 "decode_gpu": "decode_gpu", "dtype": "dtype", "ep": "ep",
                 "expert_skew": "expert_skew", "engine": "engine",
                 "async_scheduling": "async_scheduling", "spec_method": "spec_method",
                 "spec_tokens": "spec_tokens", "spec_accept": "spec_accept",
                 "draft_model": "draft_model", "kv_offload_gb": "kv_offload_gb",
                 "lora_adapters": "lora_adapters", "lora_rank": "lora_rank",
                 "max_loras": "max_loras", "max_cpu_loras": "max_cpu_loras",
                 "lora_skew": "lora_skew", "lora_targets": "lora_targets",
                 "lora_by_class": "lora_by_class"}
_LOAD_FLAGS = {"rate": "rate", "burstiness": "burstiness", "requests": "requests",
               "duration": "duration", "input_len": "input_len", "output_len": "output_len",
               "trace": "trace", "speed": "speed"}


def _scenario(args, one_design: bool):
    from .scenarios.scenario import DEMO_LOAD, scenario_from_dict
    base, source = None, ""
    data: dict = {}
    if args.scenario:
        from .intake.toml_tables import read_toml
        path = Path(args.scenario)
        data = read_toml(path, "scenario")
        base, source = path.parent, str(path)
    load = dict(data.get("load", {})) if isinstance(data.get("load", {}), dict) else data["load"]
    given = {v: getattr(args, k) for k, v in _LOAD_FLAGS.items() if getattr(args, k) is not None}
    if given:
        if isinstance(load, dict) and any(k in given for k in ("rate", "trace")):
            for k in ("rate", "trace", "users", "think_s"):
                load.pop(k, None)     # a new arrival process replaces the file's
        if not load and "trace" not in given and "rate" not in given:
            load = {k: v for k, v in DEMO_LOAD.items() if k in ("rate",)}
        load.update(given)
        if "trace" in given and not any(k in given for k in ("requests", "duration")):
            load.pop("requests", None)
            load.pop("duration", None)
        if "trace" not in load and "requests" not in load and "duration" not in load:
            load["requests"] = DEMO_LOAD["requests"]
        if "rate" in load and "input_len" not in load and "lengths_from" not in load:
            load["input_len"] = DEMO_LOAD["input_len"]
            load["output_len"] = load.get("output_len", DEMO_LOAD["output_len"])
    if given and "trace" in given:
        base_for_trace = None
    else:
        base_for_trace = base
    data["load"] = load
    if args.trace is not None:
        data["load"]["trace"] = str(Path(args.trace).resolve())
    if args.slo_ttft is not None or args.slo_tpot is not None:
        classes = data.get("classes") or [{"name": "default", "share": 1.0}]
        for c in classes:
            if isinstance(c, dict):
                if args.slo_ttft is not None:
                    c["ttft_s"] = args.slo_ttft
                if args.slo_tpot is not None:
                    c["tpot_s"] = args.slo_tpot
        data["classes"] = classes
    knobs = {v: getattr(args, k) for k, v in _DESIGN_FLAGS.items()
             if getattr(args, k) is not None}
    if "cuda_graphs" in knobs:
        knobs["cuda_graphs"] = knobs["cuda_graphs"] == "on"
    if knobs.get("prefill_replicas") or knobs.get("decode_replicas"):
        knobs.setdefault("replicas", 0)

    designs = data.get("designs") or [{}]
    if one_design and isinstance(designs, list):
        chosen = designs
        if getattr(args, "design", None):
            chosen = [d for d in designs if isinstance(d, dict) and d.get("name") == args.design]
            if not chosen:
                names = [d.get("name", f"design {k + 1}") for k, d in enumerate(designs)
                         if isinstance(d, dict)]
                raise InputError(f"--design {args.design!r}: the scenario's designs are "
                                 f"{', '.join(map(repr, names))}")
        designs = chosen[:1]
    if getattr(args, "calibration", None) and isinstance(designs, list):
        from .intake.calibration_file import read_calibration  # every design, names kept
        cal = read_calibration(args.calibration).design_knobs()
        designs = [{**d, **cal} if isinstance(d, dict) else d for d in designs]
    if knobs and isinstance(designs, list):
        designs = [{**d, **knobs, **({"name": ""} if "name" in d else {})}
                   if isinstance(d, dict) else d for d in designs]
    data["designs"] = designs
    acc = dict(data.get("acceptance", {})) if isinstance(data.get("acceptance", {}),
                                                         dict) else data["acceptance"]
    if args.runs is not None:
        acc["runs"] = args.runs
    if args.max_runs is not None:
        acc["max_runs"] = args.max_runs
    if args.seed is not None:
        acc["seed"] = args.seed
    data["acceptance"] = acc
    if args.reference:
        data["simulator"] = {"implementation": "reference"}
    if args.fault:
        faults = data.get("faults") if isinstance(data.get("faults"), dict) else {}
        data["faults"] = {**faults, "schedule": list(faults.get("schedule", [])) + args.fault}
    _with_flags(data, "resilience", {"health_check_s": args.health_check,
                                     "retry_budget": args.retry_budget})
    _with_flags(data, "restart", {"weights_from": args.weights_from,
                                  "weight_load_gb_s": args.weight_load_gb_s})
    return scenario_from_dict(data, base=base_for_trace if base_for_trace else base,
                              source=source)


def _with_flags(data: dict, table: str, values: dict) -> None:
    """The flags given (not None) over the scenario's ``[table]`` (a table that is not one is
    left for the scenario's reader to refuse)."""
    given = {k: v for k, v in values.items() if v is not None}
    old = data.get(table, {})
    if given and isinstance(old, dict):
        data[table] = {**old, **given}


def _progress(total: int, args):
    return tqdm(total=total, desc="runs", unit="run", disable=args.json or args.quiet
                or total < 2, file=sys.stderr, mininterval=1.0)


def _finish(comparisons: dict, scenario, args) -> int:
    from .reports.report import comparison_json, table, write_report
    if args.out:
        paths = write_report(comparisons, scenario, args.out)
    if args.json:
        print(json.dumps(comparison_json(comparisons, scenario), allow_nan=False))
        return 0
    main = next(iter(comparisons.values()))
    first = main.outcomes[0] if main.outcomes else None
    print(f"load: {scenario.load.describe()}")
    if first and first.synthetic:
        print("(synthetic load: model results, not production SLO performance)")
    print()
    print(table(main))
    print()
    for o in main.outcomes:
        print(f"  {o.design.name}: {o.verdict()}")
        if o.rejections():
            print(f"  {o.design.name}: {o.rejections()}")
        if o.design.kv_offload_gb:
            print(f"  {o.design.name}: {_kv_tiers_text(o)}")
        if o.design.lora_adapters:
            print(wrap(f"  {o.design.name}: {_lora_text(o)}"))
    for name, reason in main.skipped:
        print(f"  {name}: not run ({reason})")
    if len(comparisons) > 1:
        print("\nby model size:")
        for m, c in comparisons.items():
            best = c.cheapest
            if not c.outcomes:
                text = "none of the designs holds it (each is too small for the model)"
            elif best:
                text = f"{best.design.name} ({_gpus(best.design.gpus)})"
            else:
                text = "no design meets the SLOs" if c.has_slo else "no verdict (no SLOs)"
            print(f"  {m:15s} {text}")
    print()
    print(main.summary())
    if args.out:
        print(f"report: {paths[0]}")
    return 0


def _kv_tiers_text(o) -> str:
    """The CPU tier's line: prefix hits by tier, its copies' seconds against the prefill
    they saved (means over the runs)."""
    from .studies.outcome_json import kv_offload_json
    k = kv_offload_json(o)
    return (f"prefix hits {k['prefix_hit_share_hbm']:.1%} HBM, {k['prefix_hit_share_cpu']:.1%} "
            f"CPU; copies {k['load_s']:.2f} s, prefill saved {k['recompute_saved_s']:.2f} s")


def _lora_text(o) -> str:
    """The adapters' line: loads from host memory and disk, slot waits, seconds of loads and
    kernels (means over the runs)."""
    from .studies.outcome_json import lora_json
    k = lora_json(o)
    return (f"LoRA loads {k['loads_cpu']:,.0f} CPU, {k['loads_disk']:,.0f} disk, "
            f"{k['load_s']:.2f} s; {k['slot_skips']:,.0f} slot waits; kernels "
            f"{k['kernel_s']:.2f} s")


def _runs_planned(designs, models, baseline: bool) -> int:
    """Design runs a comparison will make per seed (for the progress bar)."""
    from .studies.compare import baseline_for
    count = len(designs)
    if baseline and not any(d.single_machine() for d in designs) and baseline_for(designs[0]):
        count += 1
    for m in models:
        for d in designs:
            try:
                d.with_(model=m)
            except InputError:
                continue
            count += 1
    return count


def _gpus(n: int) -> str:
    return f"{n} GPU" + ("" if n == 1 else "s")


def _share(flag):
    def parse(text):
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} must be a number, got {text!r}") from None
        if not 0 < v <= 1:
            raise argparse.ArgumentTypeError(f"{flag} must be above 0 and at most 1 (0.9: "
                                             f"90% of requests), got {text!r}")
        return v
    return parse


def _cmd_capacity(args) -> int:
    from .studies.capacity import goodput_capacity
    scenario = _scenario(args, one_design=True)
    design = scenario.designs[0]
    requests = scenario.requests or 2000
    good = goodput_capacity(design, scenario.load, args.attainment, requests=requests,
                            seed=scenario.seed, drift=args.drift)
    slos = sorted({(c.ttft_s, c.tpot_s) for c in scenario.load.classes})
    data = {
        "design": design.name, "gpus": design.gpus, "load": scenario.load.describe(),
        "attainment": good.attainment, "max_rate_rps": good.max_rate_rps,
        "rate_per_gpu": good.rate_per_gpu, "attained": good.attained,
        "slos": [{"ttft_s": t, "tpot_s": p} for t, p in slos],
        "requests_per_rate": requests, "requests_at_capacity": good.requests,
        "drift": good.drift, "seed": scenario.seed,
        "tried": [{"rate_rps": r, "attained": a, "passed": ok} for r, a, ok in good.tried],
        "goodput_definition": "DistServe: the highest request rate at which the attainment "
                              "share of requests meets every SLO"}
    slo_text = "; ".join(", ".join(x for x in (f"TTFT <= {t:g} s" if t is not None else "",
                                               f"TPOT <= {p:g} s" if p is not None else "") if x)
                         for t, p in slos)
    lines = [f"design: {design.name} ({_gpus(design.gpus)})",
             f"load: {scenario.load.describe()}",
             f"SLOs: {slo_text}; attainment {good.attainment:.0%}"]
    if good.max_rate_rps == 0:
        lines.append("goodput (DistServe): 0: even a rate of 0.001 request/s misses the "
                     "attainment")
    else:
        drift = "" if good.drift else " (drift dropped: --no-drift)"
        lines.append(f"goodput (DistServe): {good.max_rate_rps:.3g} requests/s "
                     f"({good.rate_per_gpu:.3g} per GPU), {good.attained:.1%} within every SLO "
                     f"there{drift}, at steady state ({good.requests:,} requests)")
    if args.out:
        from .reports.capacity_report import write_capacity_report
        write_capacity_report(args.out, data, lines)
    if args.json:
        print(json.dumps(data, allow_nan=False))
        return 0
    print("\n".join(lines))
    if args.out:
        print(f"report: {args.out}")
    return 0


def _cmd_plan(args) -> int:
    from .reports.plan_report import plan_json, plan_lines
    from .studies.plan import MAX_POOL_GPUS, load_pool, plan
    spec = load_pool(args.pool)
    if args.gpus is not None:
        if args.gpus > MAX_POOL_GPUS:
            raise InputError(f"--gpus {args.gpus}: at most {MAX_POOL_GPUS:,} GPUs, the bound "
                             "of a pool file's count")
        if len(spec.pool.kinds) != 1:
            raise InputError(f"--gpus {args.gpus}: the pool has two kinds of GPU; set each "
                             "count in the file")
        import dataclasses
        spec = dataclasses.replace(spec, pool=dataclasses.replace(
            spec.pool, kinds=((spec.pool.kinds[0][0], args.gpus),)))
    if args.drift is False:
        import dataclasses
        spec = dataclasses.replace(spec, pool=dataclasses.replace(spec.pool, drift=False))
    if args.calibration:
        import dataclasses

        from .intake.calibration_file import read_calibration
        knobs = tuple(sorted(read_calibration(args.calibration).design_knobs().items()))
        spec = dataclasses.replace(spec, pool=dataclasses.replace(spec.pool, design_knobs=knobs))
    # a count with no total: "search 3", which agrees in number at 1 too (tqdm's unit read
    # "10search", then "1 searches")
    with tqdm(desc="plan", bar_format="{desc}: search {n_fmt} [{elapsed}{postfix}]",
              disable=args.json or args.quiet, file=sys.stderr, mininterval=1.0) as bar:
        result = plan(spec, on_progress=lambda text: (bar.set_postfix_str(text[:40]),
                                                      bar.update()))
    if args.json:
        print(json.dumps(plan_json(result), allow_nan=False))
    else:
        print("\n".join(plan_lines(result)))
    return VERDICT_YES if result.fits else VERDICT_NO


def _cmd_run(args) -> int:
    from .studies.acceptance import evaluate
    from .studies.compare import Comparison
    scenario = _scenario(args, one_design=True)
    design = scenario.designs[0]
    if scenario.faults:
        return _run_with_faults(scenario, design, args)
    with _progress(scenario.planned_runs, args) as bar:
        o = evaluate(design, scenario.make_requests(), scenario.runs, scenario.seed,
                     scenario.criteria, scenario.implementation, on_run=lambda: bar.update(),
                     max_runs=scenario.max_runs)
    return _finish({design.model: Comparison([o], model=design.model)}, scenario, args)


def _run_with_faults(scenario, design, args) -> int:
    from .reports.decision_record import accept_json
    from .studies.accept import accept
    with _progress(2 * scenario.planned_runs, args) as bar:
        [a] = accept([design], scenario.make_requests(), scenario.faults, scenario.runs,
                     scenario.seed, scenario.criteria, scenario.fault_criteria,
                     scenario.resilience, scenario.implementation, on_run=lambda: bar.update(),
                     max_runs=scenario.max_runs)
    if args.out:
        from .reports.decision_record import write_accept_report
        write_accept_report([a], args.out, scenario.source or "(flags)",
                            scenario.load.describe(), scenario.criteria,
                            scenario.fault_criteria, a.outcome.synthetic)
    if args.json:
        print(json.dumps(accept_json([a]), allow_nan=False))
        return 0
    print(f"load: {scenario.load.describe()}")
    if a.outcome.synthetic:
        print("(synthetic load: model results, not production SLO performance)")
    print(f"design: {design.name}; faults: {', '.join(f.text() for f in scenario.faults)}\n")
    for k, (fig, figs) in enumerate(zip(a.with_faults, a.fault_figures, strict=True)):
        print(f"run {k + 1}: with the faults {fig.completed:,} of {fig.arrived:,} completed, "
              f"{fig.rejected:,} rejected, {fig.failed:,} failed; {fig.slo_attainment:.1%} "
              f"within SLOs; TTFT p95 {_ms_or_dash(fig.ttft_p95)}")
        if figs:
            f = figs[0]
            print(f"  retried {f.retried}, failed after retries {f.failed}, lost {f.lost}, "
                  f"goodput lost {f.goodput_lost} (requests within SLO without the faults but "
                  f"not with them)")
        for f in figs:
            rec = "never" if f.recovery_s is None else f"{f.recovery_s:g} s"
            floor = "never" if f.noise_floor_s is None else f"{f.noise_floor_s:g} s"
            during = "inf" if f.ttft_p95_during == float("inf") else _ms_or_dash(
                f.ttft_p95_during)
            print(f"  {f.fault}: p95 TTFT of arrivals during it {during} (before "
                  f"{_ms_or_dash(f.pre_ttft_p95)}), recovery time {rec} against the run "
                  f"without the faults, noise floor {floor}, goodput lost {f.goodput_lost}: "
                  + ("no measurable damage" if not f.measurable else
                     "never recovered" if f.recovery_s is None else "damage measured"))
    print()
    print(f"without faults: {a.outcome.verdict()}")
    if a.outcome.rejections():
        print(f"without faults: {a.outcome.rejections()}")
    print("acceptance: " + _acceptance(a))
    if args.out:
        print(f"report: {args.out}")
    return 0


def _ms_or_dash(seconds: float) -> str:
    """Milliseconds, or "-" where there is no figure (nothing completed)."""
    return "-" if seconds != seconds else f"{seconds * 1000:,.0f} ms"


def _acceptance(a) -> str:
    """'accepted', 'not accepted (why)', 'undecided (what)' or 'no verdict', and how many
    runs were made when --runs auto chose."""
    n = len(a.outcome.runs)
    runs = f" [{a.outcome.stopped.lower().replace('runs auto: ', 'runs auto, ')}]" \
        if a.outcome.stopped else ""
    if a.status == "undecided":
        return f"undecided after {n} run{'s' if n != 1 else ''} ({a.undecided()[0]})" + runs
    why = a.reasons()
    return {"pass": "accepted", "fail": "not accepted", None: "no verdict"}[a.status] + (
        f" ({why[0]})" if why else "") + runs


def _cmd_accept(args) -> int:
    from .reports.decision_record import accept_json, write_accept_report
    from .studies.accept import accept, chosen
    scenario = _scenario(args, one_design=False)
    designs = list(scenario.designs)
    per = scenario.planned_runs * (2 if scenario.faults else 1)
    with _progress(per * len(designs), args) as bar:
        results = accept(designs, scenario.make_requests(), scenario.faults, scenario.runs,
                         scenario.seed, scenario.criteria, scenario.fault_criteria,
                         scenario.resilience, scenario.implementation,
                         on_run=lambda: bar.update(), max_runs=scenario.max_runs)
    out = args.out or "accept-report"
    synthetic = results[0].outcome.synthetic if results else True
    paths = write_accept_report(results, out, scenario.source or "(flags)",
                                scenario.load.describe(), scenario.criteria,
                                scenario.fault_criteria, synthetic)
    pick = chosen(results)
    code = VERDICT_YES if pick else VERDICT_NO
    if args.json:
        print(json.dumps(accept_json(results), allow_nan=False))
        return code
    for a in results:
        print(f"  {a.design.name}: {_acceptance(a)}")
    print()
    if pick:
        print(f"chosen: {pick.design.name}")
    elif any(a.status == "undecided" for a in results):
        print("no design is accepted yet: undecided; more runs decide it (--runs auto)")
    else:
        print("no design is accepted")
    print(f"decision record: {paths[0]}\nrunbook: {paths[1]}")
    return code


def _cmd_compare(args) -> int:
    from .studies.compare import compare, compare_models
    scenario = _scenario(args, one_design=False)
    models = list(scenario.models)
    if args.models:
        models = [m.strip() for m in args.models.split(",") if m.strip()]
        bad = [m for m in models if m not in MODELS]
        if bad:
            raise InputError(f"--models {bad[0]!r}: allowed: {', '.join(MODELS)}")
    make = scenario.make_requests()
    designs = list(scenario.designs)
    # the designs' own model is the main comparison: the sweep runs only the other models
    others = [m for m in models if m != designs[0].model]
    runs = scenario.planned_runs        # a replay runs once; auto: at most max_runs
    total = runs * _runs_planned(designs, others, scenario.baseline)
    with _progress(total, args) as bar:
        tick = bar.update
        main = compare(designs, make, scenario.runs, scenario.seed, scenario.criteria,
                       scenario.implementation, scenario.baseline, on_run=lambda: tick(),
                       max_runs=scenario.max_runs)
        comparisons = {designs[0].model: main}
        if others:
            comparisons.update(compare_models(designs, others, make, scenario.runs,
                                              scenario.seed, scenario.criteria,
                                              scenario.implementation, on_run=lambda: tick(),
                                              max_runs=scenario.max_runs))
    load = scenario.load
    searchable = (load.trace is None and load.closed_loop is None and not load.tenants
                  and any(c.ttft_s is not None or c.tpot_s is not None for c in load.classes))
    if args.capacity and searchable and main.outcomes:
        from .studies.compare import with_goodput
        from .studies.steady import MIN_REQUESTS
        bar = tqdm(total=len(main.outcomes), desc="goodput search", unit="design",
                   disable=args.json or args.quiet, file=sys.stderr, mininterval=1.0)
        with bar:
            with_goodput(main, load, scenario.criteria.attainment, MIN_REQUESTS, scenario.seed,
                         on_design=bar.update)
    return _finish(comparisons, scenario, args)


def _cmd_fit(args) -> int:
    from .load.fit import fit
    from .load.replay import replay
    trace = replay(args.trace)
    result = fit(trace, args.window, args.lengths, args.seed)
    if args.json:
        print(json.dumps(result.as_dict(), allow_nan=False))
        return 0
    kind = "" if trace.synthetic else " (a real trace)"
    print(f"{trace.source}{kind}, beside a synthetic load fitted to it (seed {args.seed})")
    print(f"  synthetic load: {result.load.describe()}\n")
    print(f"  {'figure':28s} {'trace':>12s} {'synthetic':>12s}")
    for name, a, b in result.rows():
        print(f"  {name:28s} {a:12,.3f} {b:12,.3f}")
    return 0


def _cmd_isolation(args) -> int:
    from .cluster.deployment import Design
    from .studies.isolation import noisy_neighbour
    design = Design(model=args.model, gpu=args.gpu, tp=args.tp, replicas=args.replicas)
    with _progress(2 * args.runs, args) as bar:
        result = noisy_neighbour(design, args.rate, args.burst, runs=args.runs,
                                 seed=args.seed, on_run=lambda: bar.update())
    rows = result.rows()
    if args.json:
        clean = [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
                 for r in rows]
        print(json.dumps({"design": design.name, "burst": args.burst, "rate_rps": args.rate,
                          "tenants": clean, "synthetic": True}, allow_nan=False))
        return 0
    print(f"{design.name}: two tenants at {args.rate:g} req/s each; 'noisy' bursts to "
          f"{args.burst:g}x for two minutes (synthetic load)\n")
    print(f"  {'tenant':8s} {'':9s} {'TTFT p95':>10s} {'goodput/s':>10s} {'in SLO':>8s} "
          f"{'rejected':>9s}")
    for r in rows:
        for label in ("without", "with"):
            name = "isolation" if label == "with" else "sharing"
            print(f"  {r['tenant'] if label == 'without' else '':8s} {name:9s} "
                  f"{r[label + '_ttft_p95'] * 1000:>8,.0f} ms {r[label + '_goodput_rps']:>10.2f} "
                  f"{r[label + '_slo_attainment']:>8.1%} {r[label + '_rejected']:>9,.0f}")
    return 0
