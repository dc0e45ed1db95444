"""The report renders, the command line runs, latency / replica / burstiness figures are right,
and the real Azure hour audits end to end (skipped when ../shared is absent)."""

import argparse
import gzip
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

import schedatrix.audit.explorer as explorer_module
from schedatrix.audit.audit import Settings, audit_files
from schedatrix.audit.cli import add_audit_parser
from schedatrix.audit.explorer import explorer, routing_table
from schedatrix.audit.note import load_note, parse_note
from schedatrix.audit.report import (
    markdown,
    plot_demand,
    plot_replicas,
    to_json,
    verdict,
    write_report,
)
from schedatrix.audit.synth import (
    HOUR_FILES,
    constant_rate_csv,
    packaged_hour,
    write_azure_like_hour,
    write_rows,
)
from schedatrix.audit.tally import tally_traces
from schedatrix.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "schedatrix" / "examples" / "fleet-note.toml"
SHARED = ROOT / ".." / "shared"
AZURE = SHARED / "traces" / "azure-llm-2023"
needs_shared = pytest.mark.skipif(
    not AZURE.is_dir(), reason=f"the real Azure hour is not here: {AZURE.resolve()} is absent "
    "(it lives in the workspace's shared/ folder beside the repository)")


def cli(*argv: str) -> int:
    p = argparse.ArgumentParser(prog="schedatrix")
    add_audit_parser(p.add_subparsers())
    args = p.parse_args(["audit", *map(str, argv)])
    return args.func(args)


def hour_args():
    h = packaged_hour()
    return [h["large"], h["small"], "--pool-of", f"{h['large'].name}=large",
            "--pool-of", f"{h['small'].name}=small"]


def test_the_report_renders(tmp_path, capsys):
    assert cli(EXAMPLE, *hour_args(), "--out", tmp_path / "rep", "--quiet") == 0
    out = capsys.readouterr().out
    assert "Capacity:" in out and "Convergence:" in out and "Report:" in out
    rep = tmp_path / "rep"
    md = (rep / "report.md").read_text()
    assert md.startswith("# Efficiency audit")
    for name in ("demand.png", "replicas.png", "bill.png"):
        png = rep / name
        assert png.stat().st_size > 5000
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({name})" in md
    data = json.loads((rep / "audit.json").read_text())
    assert set(data["pools"]) == {"small", "large"}
    small = data["pools"]["small"]
    assert len(small["series"]["rate_rps"]) == len(data["window"]["bucket_start_s"]) == len(
        small["series"]["provisioned"])
    assert small["requests"] == sum(
        round(r * d) for r, d in zip(small["series"]["rate_rps"],
                                     data["window"]["bucket_duration_s"], strict=True))
    assert data["routing"]["threshold_tokens"] == 1000
    assert 0 < data["convergence"] and 0 <= data["unmet_share"] <= 1
    assert data["pools"]["large"]["configured"]["dollars"] == pytest.approx(
        data["pools"]["large"]["configured"]["gpu_hours"] * 2.5)
    assert "TTFT p99 < 1 s (the trace has no TTFT column)" in md


def test_the_cli_flags_reach_the_audit(tmp_path, capsys):
    f = constant_rate_csv(tmp_path / "c.csv", {"small": 6.0, "large": 3.0}, seconds=600)
    out = tmp_path / "rep"
    assert cli(EXAMPLE, f, "--out", out, "--headroom", "50%", "--bucket", "120",
               "--replica-rps", "small=2", "--no-route", "--quiet") == 0
    data = json.loads((out / "audit.json").read_text())
    assert data["settings"] == {"headroom": 0.5, "bucket_s": 120, "delay_buckets": 1,
                                "route_below": None}
    assert data["pools"]["small"]["series"]["needed"] == [5] * 5   # ceil(6 x 1.5 / 2)
    assert data["pools"]["small"]["replica_rps"] == 2
    assert data["routing"] is None


@pytest.mark.parametrize("argv, message", [
    (["--pool-of", "nope.csv=small"], "--pool-of nope.csv=small: nope.csv is not one of"),
    (["--pool-of", "c.csv"], "--pool-of 'c.csv': write it as --pool-of NAME=VALUE"),
    (["--headroom", "lots"], "--headroom 'lots'"),
    (["--replica-rps", "small=fast"], "--replica-rps small=fast"),
    (["--replica-rps", "tiny=3"], "per-replica capacity given for pool 'tiny'"),
    (["--bucket", "0"], "bucket = 0 s"),
    (["--route-from", "medium"], "route_from = 'medium': no such pool"),
])
def test_cli_bad_input_is_one_clear_error(tmp_path, argv, message):
    f = constant_rate_csv(tmp_path / "c.csv", {"small": 1.0, "large": 1.0}, seconds=120)
    with pytest.raises(InputError) as info:
        cli(EXAMPLE, f, "--out", tmp_path / "rep", "--quiet", *argv)
    assert message in str(info.value)


def test_latency_error_rate_and_replica_figures(tmp_path):
    n = 1000
    t = np.arange(n) * 0.5                     # 2 req/s for 500 s
    ttft_ms = np.arange(1, n + 1)              # 1..1000 ms: p99 = 990 ms
    status = np.where(np.arange(n) % 50 == 0, "error", "ok")     # 2% errors
    replica = np.where(np.arange(n) % 3 == 0, "r1", "r0")       # 2:1 split
    f = write_rows(tmp_path / "l.csv",
                   "timestamp_s,pool,input_tokens,output_tokens,ttft_ms,status,replica",
                   [t, np.full(n, "small", dtype=object), np.full(n, 50), np.full(n, 5),
                    ttft_ms, status.astype(object), replica.astype(object)],
                   ["%.3f", "%s", "%d", "%d", "%d", "%s", "%s"])
    note = parse_note(EXAMPLE.read_text().replace(
        'objectives = ["TTFT p99 < 1 s"]',
        'objectives = ["TTFT p99 < 1 s", "TTFT p50 < 300 ms", "error rate < 1%"]'))
    a = audit_files(note, [(f, None)])
    small = a.pool("small")
    checks = {x.objective: x for x in small.latency}
    assert checks["TTFT p99 < 1 s"].measured_s == pytest.approx(0.990)
    assert checks["TTFT p99 < 1 s"].met is True
    assert checks["TTFT p50 < 300 ms"].measured_s == pytest.approx(0.500)
    assert checks["TTFT p50 < 300 ms"].met is False
    assert (small.latency[0].p50_s, small.latency[0].p95_s) == pytest.approx((0.5, 0.95))
    assert small.error_share == pytest.approx(0.02)
    # ids that are not numbers are never copied out: #1, #2 in the sorted order of the ids
    rates = {r.replica: r for r in small.replica_rates}
    assert rates["#1"].rps == pytest.approx(666 / 500) and rates["#2"].rps == pytest.approx(
        334 / 500)
    assert rates["#1"].vs_mean == pytest.approx(666 / 500)   # mean per replica: 1 req/s
    assert any("numbered #1, #2" in x for x in a.notes)
    assert any("up to 25% off" in x and "no eviction call is safe" in x for x in a.notes)
    md = markdown(a)
    assert "MISSED" in md and "| #1 |" in md and "Error share (status column): 2.0%" in md
    assert "r0" not in md and "r0" not in json.dumps(to_json(a))
    # burstiness of an evenly spaced stream: 2 every second, no dispersion
    assert small.dispersion_1s == pytest.approx(0) and small.peak_to_average_1s == 1


def test_bursty_stream_reads_bursty(tmp_path):
    t = np.concatenate([np.full(300, 10.5), np.arange(0, 600, 1.0) + 0.25])   # a 300 burst
    f = write_rows(tmp_path / "b.csv", "timestamp_s,pool,input_tokens,output_tokens",
                   [t, np.full(len(t), "large", dtype=object), np.full(len(t), 9),
                    np.full(len(t), 9)], ["%.3f", "%s", "%d", "%d"])
    a = audit_files(load_note(EXAMPLE), [(f, None)], Settings(route_below=None))
    large = a.pool("large")
    counts = np.ones(600)
    counts[10] += 300
    assert large.peak_to_average_1s == pytest.approx(counts.max() / counts.mean())
    assert large.dispersion_1s == pytest.approx(counts.var() / counts.mean())
    assert large.peak_to_average == pytest.approx((360 / 60) / (900 / 600))


def test_assumed_capacity_is_said(tmp_path):
    text = EXAMPLE.read_text().replace('replica_capacity = "~6 requests/s per replica"', "")
    f = constant_rate_csv(tmp_path / "c.csv", {"small": 1.0, "large": 1.0}, seconds=120)
    a = audit_files(parse_note(text), [(f, None)], Settings(capacity="assume"))
    assert a.pool("small").replica_rps_assumed and a.pool("small").replica_rps == 6
    assert any("Per-replica capacity of pool small was left blank" in x for x in a.notes)
    assert "[capacity assumed]" in "\n".join(verdict(a))
    assert "(assumed (first pass): the audit was told to assume)" in markdown(a)
    assert "(from the note)" in markdown(a)          # the large pool's capacity is given
    assert to_json(a)["pools"]["small"]["replica_rps_assumed"] is True
    assert to_json(a)["pools"]["small"]["replica_rps_source"] == "assumed"


def test_packaged_hour_regenerates_byte_for_byte(tmp_path):
    made = write_azure_like_hour(tmp_path)
    shipped = packaged_hour()
    for pool in HOUR_FILES:
        assert hashlib.sha256(made[pool].read_bytes()).digest() == hashlib.sha256(
            shipped[pool].read_bytes()).digest()
        with gzip.open(shipped[pool], "rt") as g:
            assert g.readline().strip() == "TIMESTAMP,ContextTokens,GeneratedTokens"


@needs_shared
def test_the_real_azure_hour_end_to_end(tmp_path, capsys):
    code = AZURE / "AzureLLMInferenceTrace_code_2023.csv"
    conv = AZURE / "AzureLLMInferenceTrace_conv_2023.csv"
    rc = cli(EXAMPLE, code, conv, "--pool-of", f"{code.name}=large", "--pool-of",
             f"{conv.name}=small", "--out", tmp_path / "rep", "--quiet")
    assert rc == 0
    data = json.loads((tmp_path / "rep" / "audit.json").read_text())
    large, small = data["pools"]["large"], data["pools"]["small"]
    # the README's figures: rows, rates, length percentiles (p50 exact; p95 nearest-rank)
    assert (large["requests"], small["requests"]) == (8819, 19366)
    assert [f["format"] for f in data["files"]] == ["Azure LLM inference trace"] * 2
    assert large["mean_rps"] == pytest.approx(2.6, abs=0.15)
    assert small["mean_rps"] == pytest.approx(5.5, abs=0.05)
    assert (large["input_tokens"]["p50"], large["output_tokens"]["p50"]) == (1469, 13)
    assert (small["input_tokens"]["p50"], small["output_tokens"]["p50"]) == (1020, 129)
    assert small["input_tokens"]["p95"] == 4083 and small["output_tokens"]["p95"] == 451
    assert abs(large["input_tokens"]["p95"] - 7302) <= 20
    # "very bursty": the code service is far burstier than the conversation service
    assert large["dispersion_1s"] > 5 * small["dispersion_1s"] > 5
    assert large["peak_to_average"] > 2 * small["peak_to_average"]
    # the window: 18:15:46 to 19:14:19 on 2023-11-16
    assert data["window"]["seconds"] == 3514
    # the large pool (1-2 replicas at 3 req/s) can't carry the code service's bursts
    assert not large["configured"]["capacity_ok"]
    assert small["configured"]["capacity_ok"]
    assert data["routing"]["moved_share"] > 0.2
    assert data["routing"]["after"]["large"]["needed_gpu_hours"] < data["routing"]["before"][
        "large"]["needed_gpu_hours"]
    out = capsys.readouterr().out
    assert "28,185 requests" in out


def test_report_writes_into_a_fresh_directory(tmp_path):
    f = constant_rate_csv(tmp_path / "c.csv", {"small": 2.0, "large": 1.0}, seconds=300)
    a = audit_files(load_note(EXAMPLE), [(f, None)])
    paths = write_report(a, tmp_path / "deep" / "er")
    assert all(p.exists() for p in paths.values())


def _tick_values(ax) -> list[float]:
    low, high = ax.get_ylim()
    return [t for t in ax.get_yticks() if low <= t <= high]


def test_replica_axes_tick_whole_numbers_from_zero():
    """Replicas are counted: the lesson 06 hour once ticked 0.8, 1.0, 1.2 and -1."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    h = packaged_hour()
    a = audit_files(load_note(EXAMPLE), [(h["large"], "large"), (h["small"], "small")])
    fig = plot_replicas(a)
    FigureCanvasAgg(fig).draw()
    for ax in fig.axes:
        ticks = _tick_values(ax)
        assert ticks and all(float(t).is_integer() and t >= 0 for t in ticks), ticks
        assert ax.get_ylim()[0] == 0
    demand = plot_demand(a)
    FigureCanvasAgg(demand).draw()
    assert all(min(_tick_values(ax)) >= 0 for ax in demand.axes)


def test_progress_sees_every_row(tmp_path):
    f = constant_rate_csv(tmp_path / "c.csv", {"small": 50.0, "large": 20.0}, seconds=3600)
    g = constant_rate_csv(tmp_path / "d.csv", {"small": 1.0}, seconds=60)
    seen = []
    tally_traces(load_note(EXAMPLE), [(f, None), (g, None)], on_progress=seen.append)
    assert seen == [252_000, 60]   # one call per chunk, with its rows


def test_the_explorer_widgets_rerun_the_audit():
    h = packaged_hour()
    tally = tally_traces(load_note(EXAMPLE), [(h["large"], "large"), (h["small"], "small")])
    box = explorer(tally)
    headroom, small, large, threshold = box.children[:4]
    assert (headroom.value, small.value, large.value, threshold.value) == (10, 6.0, 3.0, 1000)
    calls = []
    original = explorer_module.run_audit

    def spy(t, s):
        calls.append(s)
        return original(t, s)

    explorer_module.run_audit = spy
    try:
        headroom.value = 30
        large.value = 6.0
        threshold.value = 2000
    finally:
        explorer_module.run_audit = original
    assert [c.headroom for c in calls][-1] == pytest.approx(0.3)
    assert calls[-1].replica_rps == {"small": 6.0, "large": 6.0}
    assert calls[-1].route_below == 2000
    assert "| large |" in routing_table(original(tally, calls[-1]))
