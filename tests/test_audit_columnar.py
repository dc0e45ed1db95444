"""The columnar reader (issue 14): the same rows, figures and errors as the plain-Python
reference on every format; Parquet files and folders; the real Azure hour byte for byte."""

import gzip
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_audit_hostile import HOSTILE_TRACES  # tests/test_audit_hostile.py
from test_audit_privacy import CASES as PRIVACY_CASES  # tests/test_audit_privacy.py

from schedatrix.audit.audit import audit_files
from schedatrix.audit.note import load_note, parse_note
from schedatrix.audit.report import json_text
from schedatrix.audit.synth import packaged_hour, two_pool_trace
from schedatrix.audit.tally import tally_traces
from schedatrix.errors import InputError
from schedatrix.traces.reader import TraceReader

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "schedatrix" / "examples" / "fleet-note.toml"
AZURE = ROOT / ".." / "shared" / "traces" / "azure-llm-2023"
NOTE = parse_note(EXAMPLE.read_text()
                  .replace("[pools.small]", '[pools.small]\naliases = ["ChatGPT"]')
                  .replace("[pools.large]", '[pools.large]\naliases = ["GPT-4"]'))
HEAD = "timestamp,pool,input_tokens,output_tokens,ttft_ms,e2e_s,status,replica"


def chunks(path, pool=None, engine="arrow", chunk_rows=4):
    reader = TraceReader(path, NOTE, pool, chunk_rows, engine)
    return list(reader), reader


def same_chunks(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        for k in ("t_s", "pool", "input_tokens", "output_tokens", "lines"):
            assert getattr(x, k).tolist() == getattr(y, k).tolist(), k
        for k in ("ttft_s", "e2e_s"):
            u, v = getattr(x, k), getattr(y, k)
            assert (u is None) == (v is None)
            if u is not None:
                assert np.array_equal(u, v, equal_nan=True), k
        assert (x.ok is None) == (y.ok is None)
        if x.ok is not None:
            assert x.ok.tolist() == y.ok.tolist()
        assert (x.replica is None) == (y.replica is None)
        if x.replica is not None:
            assert x.replica.tolist() == y.replica.tolist()
        assert (x.format_name, x.relative) == (y.format_name, y.relative)
        for k in ("hash_offsets", "hash_values"):   # Mooncake's hash_ids, in CSR form
            u, v = getattr(x, k), getattr(y, k)
            assert (u is None) == (v is None) and (u is None or u.tolist() == v.tolist()), k


GOOD = {
    "generic csv": ("g.csv", HEAD + "\n" + "\n".join(
        f"2024-09-02T14:00:{i:02d}.{i}Z,{'small' if i % 3 else 'large'},{10 + i},{i},{100 + i},"
        f"{'' if i % 4 else 1.5},{'ok' if i % 5 else 500},r{i % 3}" for i in range(11)) + "\n",
        None),
    "numeric, CRLF, blank lines": ("n.csv", "timestamp_s,pool,input_tokens,output_tokens\r\n"
                                   "1700000000.5,small,1,2\r\n\r\n1700000001.25,large,3,4\r\n"
                                   "\n\n1700000002,small,5,6\r\n1700000003,small,7,8", None),
    "relative ms": ("r.csv", "timestamp,pool,input_tokens,output_tokens\n"
                    + "".join(f"{i * 250},small,{i},1\n" for i in range(9)), None),
    "azure": ("AzureLLMInferenceTrace_code.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
              "2023-11-16 18:17:03.9799600,4808,10\n2023-11-16 18:17:04.0319600,3180,8\n"
              "2023-11-16 18:17:05,100,1\n2023-11-16T18:17:06+01:00,100,1\n", "large"),
    "burstgpt": ("BurstGPT_1.csv", "Timestamp,Model,Request tokens,Response tokens,"
                 "Total tokens,Log Type\n5,ChatGPT,472,18,490,Conversation log\n"
                 "45,GPT-4,1087,0,1087,API log\n60,ChatGPT,200,30,230,Conversation log\n", None),
    "mooncake": ("m.jsonl", "".join(json.dumps({"timestamp": i * 1500, "input_length": 600 + i,
                                                 "output_length": 20, "hash_ids": [i, i + 1][:i]})
                                     + "\n" for i in range(7)) + "\n\n", "small"),
    "mooncake, hashes missing": ("m2.jsonl", "".join(json.dumps(
        {"timestamp": i * 1500, "input_length": 6, "output_length": 2}
        | ({"hash_ids": [2**62, i]} if i % 3 == 0 else {})) + "\n" for i in range(7)), "small"),
    "generic jsonl": ("j.jsonl", "\n".join(json.dumps(
        {"timestamp": f"2024-09-02T14:00:0{i}", "pool": "large", "input_tokens": 100 + i,
         "output_tokens": 7, "ttft_ms": None if i == 2 else 30 + i, "status": 200,
         "replica": i % 2}) for i in range(6)) + "\n", None),
    "quoted model": ("q.csv", 'timestamp_s,pool,input_tokens,output_tokens\n'
                     '1,"small",1,1\n2,"large",2,2\n', None),
    "spaces in numbers": ("s.csv", "timestamp_s,pool,input_tokens,output_tokens\n"
                          "1, small,1, 1\n2,large,2.0,2\n", None),
}


@pytest.mark.parametrize("case", list(GOOD))
@pytest.mark.parametrize("gz", [False, True])
def test_both_engines_read_the_same_rows(tmp_path, case, gz):
    name, text, pool = GOOD[case]
    f = tmp_path / (name + (".gz" if gz else ""))
    data = ("\ufeff" if case == "azure" else "") + text
    f.write_bytes(gzip.compress(data.encode()) if gz else data.encode())
    fast, reader = chunks(f, pool)
    ref, _ = chunks(f, pool, engine="python")
    same_chunks(fast, ref)
    assert sum(len(c.t_s) for c in fast) > 1
    # the columnar path reads these itself; quotes and numbers with spaces go to the reference
    if case not in ("quoted model", "spaces in numbers"):
        assert reader.slow_blocks == 0


def _errors(path, pool, engine):
    try:
        tally_traces(NOTE, [(path, pool)], engine=engine)
    except InputError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("case", [c for c in HOSTILE_TRACES if c != "300 MB line"])
def test_both_engines_refuse_hostile_traces_alike(tmp_path, case):
    make, _ = HOSTILE_TRACES[case]
    f = make(tmp_path)
    if case == "not utf-8":
        f.write_bytes(f.read_bytes() + "2,sm\xe9ll,10,5\n".encode("latin-1"))
    fast, ref = _errors(f, None, "arrow"), _errors(f, None, "python")
    assert fast is not None and fast == ref


@pytest.mark.parametrize("case", list(PRIVACY_CASES))
def test_both_engines_keep_the_privacy_rule_alike(tmp_path, case):
    name, text, pool, status = PRIVACY_CASES[case]
    f = tmp_path / name
    f.write_text(text)
    fast, ref = _errors(f, pool, "arrow"), _errors(f, pool, "python")
    assert fast == ref
    assert (fast is None) == (status == 0)


def test_an_error_late_in_a_big_file_names_its_line(tmp_path):
    f = tmp_path / "big.csv"
    rows = [f"{1_700_000_000 + i},small,{i % 900},5" for i in range(300_000)]
    rows[280_000] = "1700280000,small,-3,5"
    f.write_text("timestamp_s,pool,input_tokens,output_tokens\n" + "\n".join(rows) + "\n")
    with pytest.raises(InputError, match="big.csv line 280002: input_tokens is a negative number"):
        tally_traces(NOTE, [(f, None)])


def _parquet_of(csv_path: Path, out: Path, **cast) -> Path:
    import pyarrow.csv as pcsv

    table = pcsv.read_csv(csv_path)
    for name, typ in cast.items():
        table = table.set_column(table.column_names.index(name), name,
                                 table.column(name).cast(typ))
    pq.write_table(table, out, row_group_size=1000)
    return out


def test_parquet_gives_the_figures_of_its_csv(tmp_path):
    csv_path = two_pool_trace(tmp_path / "t.csv", 5000, seed=3)
    parquet = _parquet_of(csv_path, tmp_path / "t.parquet",
                          pool=pa.dictionary(pa.int32(), pa.string()))
    a = audit_files(NOTE, [(csv_path, None)])
    b = audit_files(NOTE, [(parquet, None)])
    ja, jb = json.loads(json_text(a)), json.loads(json_text(b))
    assert jb["files"] == [{"file": "t.parquet", "format": "generic CSV", "rows": 5000}]
    ja.pop("files"), jb.pop("files")
    assert ja == jb


def test_a_folder_of_parquet_files_reads_as_one_trace(tmp_path):
    csv_path = two_pool_trace(tmp_path / "t.csv", 3000, seed=4)
    import pyarrow.csv as pcsv

    table = pcsv.read_csv(csv_path)
    folder = tmp_path / "parts"
    folder.mkdir()
    for k in range(3):
        pq.write_table(table.slice(k * 1000, 1000), folder / f"part-{k}.parquet")
    a = audit_files(NOTE, [(csv_path, None)])
    b = audit_files(NOTE, [(folder, None)])
    assert json.loads(json_text(a))["pools"] == json.loads(json_text(b))["pools"]
    assert b.files == (("parts", "generic CSV", 3000),)


def test_parquet_time_types_read_as_their_csv(tmp_path):
    t = np.array(["2024-09-02T14:00:00.5", "2024-09-02T14:00:01.25", "2024-09-02T14:00:03"],
                 dtype="datetime64[us]")
    base = {"pool": ["small", "large", "small"], "input_tokens": [1, 2, 3],
            "output_tokens": [4, 5, 6]}
    want = (t.astype(np.int64) / 1e6).tolist()
    for label, col in (("us", pa.array(t)), ("ns tz", pa.array(t).cast(pa.timestamp("ns", "UTC"))),
                       ("s", pa.array(t.astype("datetime64[s]"))),
                       ("text", pa.array(np.datetime_as_string(t))),
                       ("epoch s", pa.array(t.astype(np.int64) / 1e6))):
        f = tmp_path / f"{label.replace(' ', '_')}.parquet"
        pq.write_table(pa.table({"timestamp": col, **base}), f)
        got, reader = chunks(f, chunk_rows=2)
        expect = [int(x) for x in want] if label == "s" else want
        assert np.concatenate([c.t_s for c in got]).tolist() == pytest.approx(expect, abs=1e-6)
        assert [c.lines.tolist() for c in got] == [[1, 2], [3]]


@pytest.mark.parametrize("column, values, message", [
    ("input_tokens", [1, -2, 3], "p.parquet row 2: input_tokens is a negative number"),
    ("input_tokens", [1, None, 3], "p.parquet row 2: input_tokens is not a number (null or "
                                   "NaN)"),
    ("pool", ["small", "patient record", "large"], "p.parquet row 2: pool names no pool of the "
                                                    "note (a text of 14 characters)"),
    ("timestamp", [1.0, 2.0, float("inf")], "p.parquet row 3: timestamp (timestamp) is not a "
                                            "finite number"),
])
def test_parquet_errors_name_the_row(tmp_path, column, values, message):
    cols = {"timestamp": [1.0, 2.0, 3.0], "pool": ["small", "large", "small"],
            "input_tokens": [1, 2, 3], "output_tokens": [4, 5, 6]}
    cols[column] = values
    f = tmp_path / "p.parquet"
    pq.write_table(pa.table(cols), f)
    with pytest.raises(InputError) as info:
        tally_traces(NOTE, [(f, None)])
    assert message in str(info.value)
    assert "patient" not in str(info.value)


def test_parquet_text_column_is_refused_without_its_text(tmp_path):
    f = tmp_path / "p.parquet"
    secret = "Tell me the patient's diagnosis please and thanks"
    pq.write_table(pa.table({"timestamp": [1.0], "pool": ["small"], "input_tokens": [1],
                             "output_tokens": [2], "notes": [secret]}), f)
    with pytest.raises(InputError, match="column 5 carries request or response text") as info:
        tally_traces(NOTE, [(f, None)])
    assert "patient" not in str(info.value)
    g = tmp_path / "q.parquet"
    pq.write_table(pa.table({"timestamp": [1.0], "pool": ["small"], "input_tokens": [1],
                             "output_tokens": [2], "prompt": ["x"]}), g)
    with pytest.raises(InputError, match="column 5 is named like request or response text"):
        tally_traces(NOTE, [(g, None)])


def test_a_broken_parquet_file_is_one_line(tmp_path):
    f = tmp_path / "b.parquet"
    f.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(InputError, match="b.parquet can't be read as Parquet"):
        tally_traces(NOTE, [(f, None)])


def test_the_packaged_hour_audits_identically_with_both_engines():
    h = packaged_hour()
    files = [(h["large"], "large"), (h["small"], "small")]
    note = load_note(EXAMPLE)
    assert json_text(audit_files(note, files)) == json_text(
        audit_files(note, files, engine="python"))


@pytest.mark.skipif(not AZURE.is_dir(), reason=f"the real Azure hour is not here: "
                    f"{AZURE.resolve()} is absent (it lives in the workspace's shared/ folder)")
def test_the_real_azure_hour_audits_byte_for_byte_as_the_reference_reader():
    files = [(AZURE / "AzureLLMInferenceTrace_code_2023.csv", "large"),
             (AZURE / "AzureLLMInferenceTrace_conv_2023.csv", "small")]
    note = load_note(EXAMPLE)
    readers = [TraceReader(f, note, p) for f, p in files]
    for r in readers:
        list(r)
        assert r.slow_blocks == 0          # pyarrow read every block itself
    fast = json_text(audit_files(note, files))
    assert fast == json_text(audit_files(note, files, engine="python"))
    data = json.loads(fast)
    assert (data["pools"]["large"]["requests"], data["pools"]["small"]["requests"]) == (
        8819, 19366)
