"""The audit under hostile and odd traces (issue 8): one time base, gaps left out, memory that
follows the requests, uneven rows, silent acceptances, and no traceback. Every file is made
here, in tmp_path."""

import gzip
import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from schedatrix.audit.audit import Settings, audit_files
from schedatrix.audit.note import load_note, parse_note
from schedatrix.audit.tally import tally_traces
from schedatrix.cli import main
from schedatrix.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "schedatrix" / "examples" / "fleet-note.toml"
START = np.datetime64("2023-11-16T18:00:00", "us")


def iso_rows(t_s: np.ndarray, start=START) -> list[str]:
    stamps = start + np.rint(t_s * 1e6).astype("timedelta64[us]")
    return np.char.replace(np.datetime_as_string(stamps, unit="us"), "T", " ").tolist()


def azure_csv(path: Path, t_s: np.ndarray, start=START, extra: tuple[str, ...] = ()) -> Path:
    """An Azure-format file: TIMESTAMP (ISO), ContextTokens, GeneratedTokens."""
    rows = [f"{ts},{500 + i % 700},{20 + i % 90}" for i, ts in enumerate(iso_rows(t_s, start))]
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows + list(extra))
                    + "\n")
    return path


def mooncake(path: Path, t_ms: np.ndarray) -> Path:
    """A Mooncake-format file: timestamp in ms from the trace's start."""
    with open(path, "w") as f:
        for i, t in enumerate(t_ms.tolist()):
            f.write(json.dumps({"timestamp": int(t), "input_length": 800 + i % 500,
                                "output_length": 50, "hash_ids": [i, i + 1]}) + "\n")
    return path


def hour(rate: float, seconds: int = 3600) -> np.ndarray:
    return (np.arange(int(rate * seconds)) + 0.5) / rate


def cli(capsys, *argv):
    rc = main(["audit", *map(str, argv)])
    out = capsys.readouterr()
    return rc, out.out, out.err


def one_line_exit_2(capsys, *argv) -> str:
    rc, out, err = cli(capsys, *argv)
    assert rc == 2, (out, err)
    assert err.count("\n") == 1 and err.startswith("schedatrix: error: "), err
    assert "Traceback" not in err
    return err


# 1. Two traces with different time bases -----------------------------------------------------

def test_an_epoch_trace_and_a_relative_one_share_one_clock(tmp_path, capsys):
    code = azure_csv(tmp_path / "code.csv", hour(2.0))
    conv = mooncake(tmp_path / "conv.jsonl", hour(3.0) * 1000)
    rc, out, err = cli(capsys, EXAMPLE, code, conv, "--pool-of", "code.csv=large",
                       "--pool-of", "conv.jsonl=small", "--out", tmp_path / "rep", "--quiet")
    assert rc == 0, err
    assert "conv.jsonl count from the trace's start" in err
    assert "time 0 is the first arrival of the traces with epoch times, 2023-11-16 18:00:00" in err
    data = json.loads((tmp_path / "rep" / "audit.json").read_text())
    # one hour from the first arrival (18:00:00.5), not 28 million seconds
    assert data["window"]["seconds"] == 3601
    assert data["pools"]["small"]["requests"] == 10_800
    assert data["pools"]["large"]["requests"] == 7_200
    # the relative trace's minutes line up with the epoch trace's: 180 in every whole minute
    rates = data["pools"]["small"]["series"]["rate_rps"]
    assert len(rates) == 61 and rates[1:-1] == pytest.approx([3.0] * 59)
    assert data["gpu_hours"] < 8                           # 8 GPUs for an hour at most
    assert any("count from the trace's start" in x for x in data["notes"])


def test_relative_traces_alone_start_at_zero(tmp_path):
    f = mooncake(tmp_path / "m.jsonl", hour(1.0, 600) * 1000)
    a = audit_files(load_note(EXAMPLE), [(f, "small")])
    assert a.t_start_s == 0.5 and a.window_s == 600
    assert not a.warnings


def test_a_relative_millisecond_timestamp_without_a_unit_warns(tmp_path):
    f = tmp_path / "t.csv"
    rows = [f"{int(t * 1000)},small,10,5" for t in hour(1.0, 600)]
    f.write_text("timestamp,pool,input_tokens,output_tokens\n" + "\n".join(rows) + "\n")
    a = audit_files(load_note(EXAMPLE), [(f, None)])
    assert any("column 'timestamp' names no unit and its times are small" in w
               and "name the column timestamp_ms" in w for w in a.warnings)
    g = tmp_path / "t_ms.csv"
    g.write_text(f.read_text().replace("timestamp,", "timestamp_ms,", 1))
    b = audit_files(load_note(EXAMPLE), [(g, None)])
    assert b.window_s == 600 and not b.warnings


# 2. Spans that are really gaps ------------------------------------------------------------------

def test_two_pools_years_apart_audit_two_hours_and_say_so(tmp_path, capsys):
    code = azure_csv(tmp_path / "code.csv", hour(2.0), np.datetime64("2021-06-01T10:00", "us"))
    conv = azure_csv(tmp_path / "conv.csv", hour(3.0), np.datetime64("2024-06-01T10:00", "us"))
    rc, _, err = cli(capsys, EXAMPLE, code, conv, "--pool-of", "code.csv=large", "--pool-of",
                     "conv.csv=small", "--out", tmp_path / "rep", "--quiet")
    assert rc == 0
    data = json.loads((tmp_path / "rep" / "audit.json").read_text())
    assert data["window"]["seconds"] == 7200
    assert data["gpu_hours"] < 16                          # two hours of at most 8 GPUs
    assert "warning: The traces have a gap with no request in any pool: from 2021-06-01 " \
           "10:59:59 UTC (code.csv line 7201) to 2024-06-01 10:00:00 UTC (conv.csv line 2)" in err
    assert "1,096.0 days" in err
    assert "the audit covers 2.0 h of a" in err
    assert len(data["window"]["gaps"]) == 1


def test_one_outlier_row_200_days_later_does_not_bill_200_days(tmp_path):
    t = hour(2.0)
    clean = azure_csv(tmp_path / "clean.csv", t)
    late = iso_rows(np.array([200 * 86_400.0]))[0]
    odd = azure_csv(tmp_path / "odd.csv", t, extra=(f"{late},900,40",))
    note = load_note(EXAMPLE)
    a = audit_files(note, [(clean, "large")])
    b = audit_files(note, [(odd, "large")])
    assert b.pool("large").n_requests == a.pool("large").n_requests + 1   # nothing dropped
    assert b.window_s == a.window_s + 1
    dollars = b.gpu_hours * note.price_per_gpu_hour
    assert dollars < a.gpu_hours * note.price_per_gpu_hour + 0.1
    gap = [w for w in b.warnings if "gap" in w]
    assert len(gap) == 1 and "(odd.csv line 7201)" in gap[0] and "(odd.csv line 7202)" in gap[0]
    assert "200.0 days" in gap[0]


def test_a_bare_year_inside_an_iso_file_is_a_gap_named_by_its_line(tmp_path):
    f = azure_csv(tmp_path / "y.csv", hour(1.0, 600), extra=("2023,10,5",))
    a = audit_files(load_note(EXAMPLE), [(f, "small")])
    assert a.window_s == 601
    assert any("from 2023-01-01 00:00:00 UTC (y.csv line 602)" in w for w in a.warnings)


@pytest.mark.parametrize("stamp", ["1600-01-01 00:00:00", "2300-01-01 00:00:00",
                                   "1969-12-31 23:59:59"])
def test_times_outside_1970_to_2199_are_refused_not_wrapped(tmp_path, stamp):
    f = azure_csv(tmp_path / "w.csv", hour(1.0, 60), extra=(f"{stamp},10,5",))
    when = "before 1970" if stamp < "1970" else "after 2199"
    with pytest.raises(InputError, match=rf"w.csv line 62: timestamp \(TIMESTAMP\) is "
                                         rf"a time {when}: allowed: ISO-8601 .* from 1970 to "
                                         "2199"):
        tally_traces(load_note(EXAMPLE), [(f, "small")])


def test_memory_follows_requests_not_span_bucket_or_delay(tmp_path):
    # 2,000 requests spread over 369 days, read with 1 s buckets, no gap, a huge delay: a dense
    # count per second or bucket would take 8 bytes x 32 million per array
    rng = np.random.default_rng(3)
    t = np.sort(rng.random(2000)) * 369 * 86_400
    f = tmp_path / "year.csv"
    f.write_text("timestamp_s,pool,input_tokens,output_tokens\n" + "".join(
        f"{1_600_000_000 + x:.3f},{'small' if i % 3 else 'large'},{100 + i},7\n"
        for i, x in enumerate(t)))
    note = load_note(EXAMPLE)
    tracemalloc.start()
    try:
        a = audit_files(note, [(f, None)], Settings(delay_buckets=1_000_000_000,
                                                    gap_s=10**9), bucket_s=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 60e6, peak
    assert a.window_s == pytest.approx(t[-1] - t[0], abs=2)
    assert len(a.duration_s) < 4 * 2000 + 10            # pieces, not 32 million buckets
    assert a.duration_s.sum() == a.window_s
    assert sum(p.n_requests for p in a.pools) == 2000
    # the autoscaler sized to the first bucket's need all along (its delay outlasts the trace)
    small = a.pool("small").sizing
    assert (small.configured.replicas == small.configured.replicas[0]).all()
    # the same trace with the default gap: every stretch is a second or so, and it says so
    b = audit_files(note, [(f, None)], bucket_s=1)
    assert b.window_s < 0.05 * a.window_s
    assert any("gaps with no request in any pool; the longest" in w for w in b.warnings)


def test_empty_buckets_inside_a_stretch_are_billed_as_pieces_exactly(tmp_path):
    # 1 req/s for 10 minutes, 50 quiet minutes, 1 req/s for 10 minutes (no gap at 1 h)
    t = np.concatenate([hour(1.0, 600), 3600 + hour(1.0, 600)])
    f = azure_csv(tmp_path / "q.csv", t)
    note = load_note(EXAMPLE)
    a = audit_files(note, [(f, "small")], Settings(route_below=None))
    assert a.window_s == 4200 and not a.window.gaps
    # 20 busy buckets, the quiet run cut where the autoscaler (1 bucket late) stops following
    # the last busy bucket: 1 quiet bucket, then 49
    assert a.window.n_buckets.sum() == 70 and len(a.duration_s) == 22
    assert a.window.n_buckets[10:12].tolist() == [1, 49]
    s = a.pool("small").sizing
    # the quiet 50 minutes run the autoscaler's minimum (1 replica, 1 GPU) after a delay
    assert s.configured.gpu_hours == pytest.approx(4200 / 3600)
    assert s.ideal.idle_gpu_hours == pytest.approx(3000 / 3600 + 1200 / 3600 * (1 - 1 / 6))


# 3. Rows of uneven width --------------------------------------------------------------------------

def test_rows_of_uneven_width_stop_the_read_at_the_first(tmp_path):
    f = tmp_path / "u.csv"
    f.write_text("timestamp_s,pool,input_tokens,output_tokens\n1,small,10,5\n"
                 "2,small,10,5,9\n3,small,10,5\n4,small,10\n")   # one extra, a later one short
    with pytest.raises(InputError, match="u.csv line 3: 5 fields, the header has 4"):
        tally_traces(load_note(EXAMPLE), [(f, None)])


# 4. Accepted without a word -----------------------------------------------------------------------

@pytest.mark.parametrize("price", ["nan", "inf", "-inf"])
def test_a_price_that_is_not_finite_is_refused(price):
    text = EXAMPLE.read_text().replace("price_per_gpu_hour = 2.50", f"price_per_gpu_hour = {price}")
    with pytest.raises(InputError, match=f"price_per_gpu_hour = {price}: must be a finite number"):
        parse_note(text)


def test_the_same_trace_twice_is_refused(tmp_path, capsys):
    f = azure_csv(tmp_path / "c.csv", hour(1.0, 60))
    (tmp_path / "sub").mkdir()
    err = one_line_exit_2(capsys, EXAMPLE, f, tmp_path / "sub" / ".." / "c.csv", "--pool-of",
                          "c.csv=small", "--out", tmp_path / "rep")
    assert "is given twice" in err and "counted twice" in err
    with pytest.raises(InputError, match="is given twice"):
        tally_traces(load_note(EXAMPLE), [(f, "small"), (f, "small")])


def test_one_trace_given_to_two_pools_is_refused(tmp_path, capsys):
    f = azure_csv(tmp_path / "c.csv", hour(1.0, 60))
    err = one_line_exit_2(capsys, EXAMPLE, f, "--pool-of", "c.csv=small", "--pool-of",
                          "c.csv=large", "--out", tmp_path / "rep")
    assert "is already given to pool small" in err


@pytest.mark.parametrize("header, message", [
    ("timestamp_s,pool,input_tokens,output_tokens,pool",
     "columns 2 and 5 have the same name 'pool'"),
    ("timestamp_s,pool,input_tokens,output_tokens,Input Tokens",
     "columns 3 and 5 have the same name 'Input Tokens'"),
    ("timestamp_s,timestamp_ms,pool,input_tokens,output_tokens",
     "columns 'timestamp_s' and 'timestamp_ms' both give the time"),
    ("timestamp_s,pool,input_tokens,prompt_tokens,output_tokens",
     "columns 'input_tokens' and 'prompt_tokens' both give the input"),
])
def test_a_repeated_column_is_refused(tmp_path, header, message):
    f = tmp_path / "d.csv"
    f.write_text(header + "\n" + ",".join(["1", "small", "10", "5", "7"][: header.count(",") + 1])
                 + "\n")
    with pytest.raises(InputError, match=message):
        tally_traces(load_note(EXAMPLE), [(f, None)])


@pytest.mark.parametrize("value, shown", [("true", "true"), ("false", "false"),
                                           ("[3]", "a JSON list"), ("null", "null")])
def test_a_json_token_count_must_be_a_number(tmp_path, value, shown):
    f = tmp_path / "j.jsonl"
    f.write_text('{"timestamp": 0, "input_length": 5, "output_length": 5}\n'
                 f'{{"timestamp": 10, "input_length": {value}, "output_length": 5}}\n')
    with pytest.raises(InputError, match=f"j.jsonl line 2: input_length is {shown}: tokens must"):
        tally_traces(load_note(EXAMPLE), [(f, "small")])


def test_a_json_key_twice_is_refused(tmp_path):
    f = tmp_path / "k.jsonl"
    f.write_text('{"timestamp": 0, "input_length": 5, "input_length": 9, "output_length": 5}\n')
    with pytest.raises(InputError, match="k.jsonl line 1: a key appears twice"):
        tally_traces(load_note(EXAMPLE), [(f, "small")])


def test_pool_of_over_a_pool_column_is_said(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("timestamp_s,pool,input_tokens,output_tokens\n1,small,10,5\n2,large,10,5\n")
    a = audit_files(load_note(EXAMPLE), [(f, "small")])
    assert a.pool("small").n_requests == 2
    assert any("--pool-of puts every request in pool small; its column 'pool' is not read" in w
               for w in a.warnings)


# 6. Tracebacks that lose a finished audit ------------------------------------------------------

@pytest.mark.parametrize("dest", ["file", "/proc/x", "/dev/null/x"])
def test_a_bad_destination_stops_before_the_reading(tmp_path, capsys, dest):
    out = tmp_path / "taken.txt" if dest == "file" else Path(dest)
    if dest == "file":
        out.write_text("keep me")
    bad_trace = tmp_path / "never_read.csv"
    bad_trace.write_text("timestamp_s,pool,input_tokens,output_tokens\n1,small,-5,5\n")
    err = one_line_exit_2(capsys, EXAMPLE, bad_trace, "--out", out)
    assert "--out" in err and "never_read" not in err
    if dest == "file":
        assert out.read_text() == "keep me"


def _corrupt_gz(tmp_path):
    f = tmp_path / "c.csv.gz"
    f.write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(200)))
    return f


def _truncated_gz(tmp_path):
    f = tmp_path / "t.csv.gz"
    data = gzip.compress(("timestamp_s,pool,input_tokens,output_tokens\n"
                          + "1,small,10,5\n" * 5000).encode())
    f.write_bytes(data[: len(data) // 2])
    return f


def _csv(name, rows):
    def make(tmp_path):
        f = tmp_path / name
        f.write_text("timestamp_s,pool,input_tokens,output_tokens\n" + rows)
        return f
    return make


def _jsonl(name, text):
    def make(tmp_path):
        f = tmp_path / name
        f.write_text(text)
        return f
    return make


def _one_line(tmp_path):
    f = tmp_path / "one_line.csv"
    with open(f, "wb") as g:
        g.write(b"timestamp_s,pool,input_tokens,output_tokens" + b",x" * (2 << 20))
        g.truncate(300 * 10**6)   # 300 MB without a line break (sparse on disk)
    return f


HOSTILE_TRACES = {
    "corrupt gz": (_corrupt_gz, "not a valid gzip file"),
    "truncated gz": (_truncated_gz, "not a valid gzip file"),
    "tokens 1e19": (_csv("e19.csv", "1,small,1e19,5\n"),
                    "input_tokens is a number above 1,000,000,000"),
    "400-digit tokens": (_csv("digits.csv", "1,small," + "9" * 400 + ",5\n"),
                         "input_tokens is a number above 1,000,000,000"),
    "json 2**64": (_jsonl("big.jsonl", '{"timestamp": 1, "pool": "small", "input_tokens": '
                                       f'{2**64}, "output_tokens": 5}}\n'),
                   "input_tokens is a number above 1,000,000,000: tokens must"),
    "json 400 digits": (_jsonl("big4.jsonl", '{"timestamp": 1, "pool": "small", '
                                             f'"input_tokens": {"9" * 400}, '
                                             '"output_tokens": 5}\n'),
                        "input_tokens is a number above 1,000,000,000"),
    "json 5000 digits": (_jsonl("big5.jsonl", '{"timestamp": 1, "pool": "small", '
                                              f'"input_tokens": {"9" * 5000}, '
                                              '"output_tokens": 5}\n'),
                         "line 1: not a JSON object"),
    "nested json": (_jsonl("deep.jsonl", "[" * 100_000 + "]" * 100_000 + "\n"),
                    "line 1: not a flat JSON object (nested too deep)"),
    "nested value": (_jsonl("deep2.jsonl", '{"timestamp": 1, "pool": "small", "input_tokens": 1,'
                                           ' "output_tokens": 1, "x": ' + "[" * 50_000
                                           + "]" * 50_000 + "}\n"),
                     "line 1: not a flat JSON object (nested too deep)"),
    "timestamp 1e300": (_csv("huge_t.csv", "1e300,small,10,5\n"),
                        "timestamp (timestamp_s) is a number past 2199 as a time"),
    "timestamp inf": (_csv("inf_t.csv", "inf,small,10,5\n"),
                      "timestamp (timestamp_s) is a text of 3 characters"),
    "quoted newline": (_csv("q.csv", '1,small,10,5\n2,"small\nlarge",10,5\n'),
                       "line 3: a quoted field runs past the end of the line"),
    "300 MB line": (_one_line, "line 1: longer than 1,048,576 bytes"),
    "not utf-8": (_csv("latin.csv", "1,small,10,5\n"), None),
    "empty": (_jsonl("empty.csv", ""), "empty file or no header line"),
}


@pytest.mark.parametrize("case", list(HOSTILE_TRACES))
def test_hostile_traces_get_one_line_and_exit_2(tmp_path, capsys, case):
    make, message = HOSTILE_TRACES[case]
    f = make(tmp_path)
    if case == "not utf-8":
        f.write_bytes(f.read_bytes() + "2,sm\xe9ll,10,5\n".encode("latin-1"))
        message = "latin.csv line 3: not UTF-8 text"
    err = one_line_exit_2(capsys, EXAMPLE, f, "--out", tmp_path / "rep", "--quiet")
    assert message in err


def test_a_latin1_note_and_a_5000_digit_count_are_one_line(tmp_path, capsys):
    f = azure_csv(tmp_path / "c.csv", hour(1.0, 60))
    latin = tmp_path / "latin.toml"
    latin.write_bytes(EXAMPLE.read_text().replace("vLLM", "vLLM caf\xe9").encode("latin-1"))
    err = one_line_exit_2(capsys, latin, f, "--pool-of", "c.csv=small", "--out", tmp_path / "r")
    assert "latin.toml' line 8: not UTF-8 text" in err
    for old, new in (('gpus = "8 x', f'gpus = "{"9" * 5000} x'),
                     ('capacity = "autoscaled, 1-4', f'capacity = "autoscaled, 1-{"4" * 5000}'),
                     ('price_per_gpu_hour = 2.50', f'price_per_gpu_hour = {"9" * 5000}')):
        note = tmp_path / "big.toml"
        note.write_text(EXAMPLE.read_text().replace(old, new))
        err = one_line_exit_2(capsys, note, f, "--pool-of", "c.csv=small", "--out",
                              tmp_path / "r")
        assert len(err) < 600


def test_a_byte_order_mark_is_skipped(tmp_path, capsys):
    note = tmp_path / "bom.toml"
    note.write_bytes(b"\xef\xbb\xbf" + EXAMPLE.read_bytes())
    moon = tmp_path / "bom.jsonl"
    moon.write_bytes(b"\xef\xbb\xbf" + mooncake(tmp_path / "m.jsonl", hour(1.0, 120) * 1000)
                     .read_bytes())
    csv = tmp_path / "bom.csv"
    csv.write_bytes(b"\xef\xbb\xbf" + azure_csv(tmp_path / "a.csv", hour(1.0, 120)).read_bytes())
    rc, out, err = cli(capsys, note, moon, csv, "--pool-of", "bom.jsonl=small", "--pool-of",
                       "bom.csv=large", "--out", tmp_path / "rep", "--quiet")
    assert rc == 0, err
    data = json.loads((tmp_path / "rep" / "audit.json").read_text())
    assert [f["format"] for f in data["files"]] == ["Mooncake", "Azure LLM inference trace"]
    assert data["pools"]["small"]["requests"] == data["pools"]["large"]["requests"] == 120


@pytest.mark.parametrize("argv, message", [
    (["--bucket", "0"], "bucket = 0 s"),
    (["--bucket", str(10**12)], "bucket = 1000000000000 s: must be a whole number of seconds "
                                "from 1 to 31,622,400"),
    (["--delay", "-1"], "reaction delay = -1"),
    (["--headroom", "nan"], "headroom = nan"),
    (["--replica-rps", "small=inf"], "per-replica capacity for small = inf"),
    (["--route-below", str(10**20)], "routing threshold = 100000000000000000000"),
    (["--gap", "0"], "gap = 0 s"),
    (["--delay", "9" * 5000], "--delay"),
])
def test_knobs_out_of_range_are_one_line(tmp_path, capsys, argv, message):
    f = azure_csv(tmp_path / "c.csv", hour(1.0, 60))
    err = one_line_exit_2(capsys, EXAMPLE, f, "--pool-of", "c.csv=small", "--out",
                          tmp_path / "rep", *argv)
    assert message in err


def test_a_huge_delay_runs(tmp_path):
    f = azure_csv(tmp_path / "c.csv", hour(5.0))
    a = audit_files(load_note(EXAMPLE), [(f, "small")], Settings(delay_buckets=10**18))
    assert len(a.duration_s) == 60


def test_a_report_of_very_many_pieces_stays_bounded(tmp_path, monkeypatch):
    import schedatrix.audit.report as report

    monkeypatch.setattr(report, "MAX_SERIES", 5)
    monkeypatch.setattr(report, "MAX_STEPS", 3)
    f = azure_csv(tmp_path / "c.csv", hour(1.0, 600))
    a = audit_files(load_note(EXAMPLE), [(f, "small")])
    paths = report.write_report(a, tmp_path / "rep")
    data = json.loads(paths["json"].read_text())
    assert len(a.duration_s) == 10
    assert data["pools"]["small"]["series"] is None
    assert data["window"]["bucket_start_s"] is None
    assert data["pools"]["small"]["configured"]["replicas"] is None
    assert data["pools"]["small"]["requests"] == 600      # the figures are all there
    x, y = report._steps(np.arange(10.0), np.array([0, 5, 1, 0, 0, 9, 0, 0, 2, 0]))
    assert x.tolist() == [0, 3, 6] and y.tolist() == [5, 9, 2]
