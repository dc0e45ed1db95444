"""Trace readers: every format, timestamps, privacy, bad rows with file and line, chunking."""

import gzip
import json

import numpy as np
import pytest

from schedatrix.audit.note import parse_note
from schedatrix.audit.tally import tally_traces
from schedatrix.errors import InputError
from schedatrix.traces.reader import read_trace

NOTE = parse_note("""
[fleet]
gpus = "8 x NVIDIA A100 80GB"
[pools.small]
model = "Llama 3.2 3B"
capacity = "autoscaled, 1-4 replicas, 1 GPU/replica"
aliases = ["ChatGPT"]
[pools.large]
model = "Llama 3.1 70B"
capacity = "autoscaled, 1-2 replicas, 2 GPUs/replica"
aliases = ["GPT-4"]
""")


def read_all(path, pool=None, chunk_rows=50_000):
    chunks = list(read_trace(path, NOTE, pool, chunk_rows))
    cat = {k: np.concatenate([getattr(c, k) for c in chunks])
           for k in ("t_s", "pool", "input_tokens", "output_tokens")}
    return chunks, cat


def test_generic_csv_with_optional_columns(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("timestamp,pool,input_tokens,output_tokens,ttft_ms,e2e_s,status,replica\n"
                 "2024-09-02T14:00:00Z,small,10,5,120,1.5,ok,s-1\n"
                 "2024-09-02T14:00:01.5Z,large,2000,50,900,,500,l-1\n")
    chunks, cat = read_all(f)
    c = chunks[0]
    assert c.format_name == "generic CSV"
    assert cat["t_s"][1] - cat["t_s"][0] == pytest.approx(1.5)
    assert cat["t_s"][0] == pytest.approx(1725285600.0)
    assert cat["pool"].tolist() == [0, 1]
    assert c.ttft_s.tolist() == pytest.approx([0.12, 0.9])
    assert c.e2e_s[0] == 1.5 and np.isnan(c.e2e_s[1])
    assert c.ok.tolist() == [True, False]
    assert c.replica.tolist() == ["s-1", "l-1"]


@pytest.mark.parametrize("header, values, expected", [
    ("timestamp_s", ["1700000000.25", "1700000001.75"], [1700000000.25, 1700000001.75]),
    ("timestamp_ms", ["1700000000250", "1700000001750"], [1700000000.25, 1700000001.75]),
    ("timestamp", ["1700000000250", "1700000001750"], [1700000000.25, 1700000001.75]),
    ("timestamp", ["12.5", "14"], [12.5, 14.0]),
    ("timestamp", ["2023-11-16 18:17:03.9799600", "2023-11-16T19:17:03+01:00"],
     [1700158623.97996, 1700158623.0]),
])
def test_timestamps_iso_seconds_milliseconds(tmp_path, header, values, expected):
    f = tmp_path / "t.csv"
    f.write_text(f"{header},pool,input_tokens,output_tokens\n"
                 + "".join(f"{v},small,1,1\n" for v in values))
    _, cat = read_all(f)
    assert cat["t_s"].tolist() == pytest.approx(expected, abs=1e-6)


def test_azure_format_needs_its_pool(tmp_path):
    f = tmp_path / "AzureLLMInferenceTrace_code.csv"
    f.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                 "2023-11-16 18:17:03.9799600,4808,10\n2023-11-16 18:17:04.0319600,3180,8\n")
    with pytest.raises(InputError, match="has no pool column: give its pool with --pool-of "
                                         "AzureLLMInferenceTrace_code.csv=POOL"):
        read_all(f)
    chunks, cat = read_all(f, pool="large")
    assert chunks[0].format_name == "Azure LLM inference trace"
    assert cat["pool"].tolist() == [1, 1]
    assert cat["input_tokens"].tolist() == [4808, 3180]
    with pytest.raises(InputError, match="no pool 'medium' in the note"):
        read_all(f, pool="medium")


def test_mooncake_jsonl(tmp_path):
    f = tmp_path / "mooncake.jsonl"
    rows = [{"timestamp": 0, "input_length": 6955, "output_length": 52, "hash_ids": [1, 2]},
            {"timestamp": 1500, "input_length": 6472, "output_length": 26, "hash_ids": [3]}]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    chunks, cat = read_all(f, pool="large")
    assert chunks[0].format_name == "Mooncake"
    assert cat["t_s"].tolist() == [0.0, 1.5]
    assert cat["output_tokens"].tolist() == [52, 26]


def test_burstgpt_maps_models_to_pools(tmp_path):
    f = tmp_path / "BurstGPT_1.csv"
    f.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                 "5,ChatGPT,472,18,490,Conversation log\n45,GPT-4,1087,0,1087,API log\n"
                 "60,ChatGPT,200,30,230,Conversation log\n")
    chunks, cat = read_all(f)
    assert chunks[0].format_name == "BurstGPT"
    assert cat["pool"].tolist() == [0, 1, 0]
    assert cat["t_s"].tolist() == [5.0, 45.0, 60.0]
    f.write_text(f.read_text() + "61,Claude,1,1,2,API log\n")
    with pytest.raises(InputError, match=r"BurstGPT_1.csv line 5: Model names no pool of the "
                                         r"note \(a text of 6 characters\)") as info:
        read_all(f)
    assert "Claude" not in str(info.value)     # a value that is not a number is never quoted


def test_generic_jsonl_and_gzip(tmp_path):
    f = tmp_path / "t.jsonl.gz"
    with gzip.open(f, "wt") as g:
        for i in range(5):
            g.write(json.dumps({"timestamp": f"2024-09-02T14:00:0{i}", "pool": "large",
                                "input_tokens": 100 + i, "output_tokens": 7}) + "\n")
    chunks, cat = read_all(f, chunk_rows=2)
    assert [len(c.t_s) for c in chunks] == [2, 2, 1]
    assert cat["input_tokens"].tolist() == [100, 101, 102, 103, 104]
    assert chunks[-1].lines.tolist() == [5]


@pytest.mark.parametrize("column", ["prompt", "completion_text", "Response", "messages",
                                    "request_body"])
def test_a_text_column_is_refused_by_name(tmp_path, column):
    secret = "please summarise my medical records"
    f = tmp_path / "t.csv"
    f.write_text(f"timestamp,pool,input_tokens,output_tokens,{column}\n"
                 f"1,small,10,5,\"{secret}\"\n")
    with pytest.raises(InputError) as info:
        read_all(f)
    assert "column 5 is named like request or response text" in str(info.value)
    assert secret not in str(info.value) and "medical" not in str(info.value)


def test_text_in_an_unknown_column_is_refused_by_content(tmp_path):
    secret = "Write a poem about the sea and the sky, in the style of a sailor"
    f = tmp_path / "t.csv"
    f.write_text("timestamp,pool,input_tokens,output_tokens,notes\n1,small,10,5,short\n"
                 f"2,small,10,5,\"{secret}\"\n")
    with pytest.raises(InputError, match="column 5 carries request or response text") as info:
        read_all(f)
    assert "poem" not in str(info.value) and "notes" not in str(info.value)
    g = tmp_path / "t.jsonl"
    g.write_text(json.dumps({"timestamp": 1, "pool": "small", "input_tokens": 3,
                             "output_tokens": 4, "extra": secret}) + "\n")
    with pytest.raises(InputError, match="a field the audit doesn't use carries request") as info:
        read_all(g)
    assert "poem" not in str(info.value) and "extra" not in str(info.value)


def test_token_count_columns_are_not_text(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("timestamp,pool,prompt_tokens,completion_tokens,request_id\n1,small,10,5,a\n")
    _, cat = read_all(f)
    assert cat["input_tokens"].tolist() == [10]


@pytest.mark.parametrize("row, message", [
    ("yesterday,small,10,5", "line 3: timestamp (timestamp) is a text of 9 characters"),
    ("2024-13-45T00:00:00,small,10,5",
     "line 3: timestamp (timestamp) is a text of 19 characters"),
    (",small,10,5", "line 3: timestamp (timestamp) is blank"),
    ("2024-09-02T14:00:02,small,-4,5", "line 3: input_tokens is a negative number: tokens must "
                                       "be a whole number from 0 to 1,000,000,000"),
    ("2024-09-02T14:00:02,small,10,2.5", "line 3: output_tokens is a number that is not whole: "
                                         "tokens must be"),
    ("2024-09-02T14:00:02,small,ten,5", "line 3: input_tokens is a text of 3 characters"),
    ("2024-09-02T14:00:02,medium,10,5", "line 3: pool names no pool of the note (a text of "
                                        "6 characters); allowed: the note's pools (small, "
                                        "large)"),
    ("2024-09-02T14:00:02,small,10", "line 3: 3 fields, the header has 4"),
])
def test_bad_rows_stop_with_file_and_line(tmp_path, row, message):
    f = tmp_path / "bad.csv"
    f.write_text("timestamp,pool,input_tokens,output_tokens\n"
                 f"2024-09-02T14:00:01,small,10,5\n{row}\n2024-09-02T14:00:03,small,10,5\n")
    with pytest.raises(InputError) as info:
        read_all(f)
    assert str(info.value).startswith("trace bad.csv ")
    assert message in str(info.value)


def test_bad_row_line_numbers_count_across_chunks_and_blank_lines(tmp_path):
    f = tmp_path / "bad.csv"
    rows = [f"{i},small,10,5" for i in range(10)]
    rows[7] = "7,small,10,-1"
    f.write_text("timestamp_s,pool,input_tokens,output_tokens\n" + "\n".join(rows[:3])
                 + "\n\n" + "\n".join(rows[3:]) + "\n")
    with pytest.raises(InputError, match="line 10: output_tokens is a negative number"):
        read_all(f, chunk_rows=3)
    g = tmp_path / "bad.jsonl"
    g.write_text('{"timestamp": 1, "pool": "small", "input_tokens": 1, "output_tokens": 1}\n\n'
                 '{"timestamp": 2, "pool": "small", "input_tokens": 1}\n')
    with pytest.raises(InputError, match="bad.jsonl line 3: field 'output_tokens' is missing"):
        read_all(g)
    g.write_text('{"timestamp": 1, "pool": "small", "input_tokens": 1, "output_tokens": 1}\n'
                 "not json\n")
    with pytest.raises(InputError, match="bad.jsonl line 2: not a JSON object"):
        read_all(g)


def test_a_misread_time_unit_is_caught(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("timestamp_s,pool,input_tokens,output_tokens\n1700000000,small,1,1\n"
                 "1700000000000,small,1,1\n")
    with pytest.raises(InputError, match=r"t.csv line 3: timestamp \(timestamp_s\) is "
                                         "a number past 2199 as a time: allowed: ISO-8601"):
        tally_traces(NOTE, [(f, None)])


def test_unsorted_arrivals_and_chunking_change_nothing(tmp_path):
    rng = np.random.default_rng(7)
    n = 3000
    t = np.sort(rng.random(n) * 900)
    pool = np.where(rng.random(n) < 0.5, "small", "large")
    inp = rng.integers(1, 5000, n)
    rows = [f"{a:.3f},{p},{i},{i // 10}" for a, p, i in zip(t, pool, inp, strict=True)]
    sorted_f, shuffled_f = tmp_path / "sorted.csv", tmp_path / "shuffled.csv"
    head = "timestamp_s,pool,input_tokens,output_tokens\n"
    sorted_f.write_text(head + "\n".join(rows) + "\n")
    shuffled_f.write_text(head + "\n".join(rows[i] for i in rng.permutation(n)) + "\n")
    a = tally_traces(NOTE, [(sorted_f, None)])
    b = tally_traces(NOTE, [(shuffled_f, None)])
    for pa, pb in zip(a.pools, b.pools, strict=True):
        assert pa.n == pb.n > 0
        (ka, va), (kb, vb) = pa.cells.items(), pb.cells.items()
        assert (ka == kb).all() and (va == vb).all()
        (ka, va), (kb, vb) = pa.seconds.items(), pb.seconds.items()
        assert (ka == kb).all() and (va[:, 0] == vb[:, 0]).all()   # counts (rows differ)
        assert (pa.input_hist.counts == pb.input_hist.counts).all()
    assert a.pools[0].cells.items()[1][:, 0].sum() == (pool == "small").sum()
