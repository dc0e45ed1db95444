"""The privacy rule on every path that prints: no error, warning, verdict or report quotes a
trace's value that is not a number or a timestamp (it names the column and line instead)."""

import json
from pathlib import Path

import pytest

from schedatrix.cli import main
from schedatrix.traces.privacy import quotable, shown

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "schedatrix" / "examples" / "fleet-note.toml"
SECRET = "Tell me the patient's diagnosis please and thanks"
WORDS = ("patient", "diagnosis", "tell me")
HEAD = "timestamp_s,pool,input_tokens,output_tokens"
BURST = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"

CASES = {
    # (file name, text, --pool-of pool or None, exit status)
    "headerless, text first": ("a.csv", f"{SECRET},12,5\n1,small,10,5\n", None, 2),
    "headerless, text only": ("b.csv", f"{SECRET},and more\n{SECRET},again\n", None, 2),
    "headerless, one field": ("c.csv", f"{SECRET}\n", None, 2),
    "text in a token field": ("d.csv", f"{HEAD}\n1,small,10,5\n2,small,{SECRET},5\n", None, 2),
    "text shifts a row": ("e.csv", f"{HEAD}\n1,small,{SECRET.replace(' ', ', ', 1)},5\n",
                          None, 2),
    "quoted text in a count": ("f.csv", f'{HEAD}\n1,small,"{SECRET}, really",5\n', None, 2),
    "quoted text over lines": ("g.csv", f'{HEAD}\n1,small,"{SECRET}\nplease",5\n', None, 2),
    "text in the time field": ("h.csv", f"TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                        f"{SECRET},10,5\n", "small", 2),
    "text in the pool field": ("i.csv", f"{HEAD}\n1,{SECRET},10,5\n", None, 2),
    "a short text pool": ("i2.csv", f"{HEAD}\n1,patient,10,5\n", None, 2),
    "text in a model field": ("j.csv", f"{BURST}\n5,{SECRET},472,18,490,API log\n", None, 2),
    "text in a latency": ("k.csv", f"{HEAD},ttft_ms\n1,small,10,5,{SECRET}\n", None, 2),
    "free text replica": ("l.csv", f"{HEAD},replica\n1,small,10,5,{SECRET}\n", None, 2),
    "short text replicas": ("m.csv", f"{HEAD},replica\n1,small,10,5,patient-1\n"
                                     f"2,small,10,5,diagnosis-2\n3,large,10,5,patient-3\n",
                            None, 0),
    "free text status": ("n.csv", f"{HEAD},status\n1,small,10,5,{SECRET}\n", None, 2),
    "short text status": ("n2.csv", f"{HEAD},status\n1,small,10,5,patient\n", None, 0),
    "free text, unknown column": ("o.csv", f"{HEAD},notes\n1,small,10,5,{SECRET}\n", None, 2),
    "short text, unknown column": ("p.csv", f"{HEAD},notes\n1,small,10,5,patient\n", None, 0),
    "a text column name": ("q.csv", f"{HEAD},patient diagnosis prompt\n1,small,10,5,x\n",
                           None, 2),
    "a repeated text name": ("r.csv", f"{HEAD},patient diagnosis,patient diagnosis\n"
                                      "1,small,10,5,x,y\n", None, 2),
    "no time, text names": ("s.csv", "pool,input_tokens,output_tokens,patient diagnosis\n"
                                     "small,1,1,x\n", None, 2),
    "json token text": ("t.jsonl", json.dumps({"timestamp": 1, "input_length": SECRET,
                                               "output_length": 5}) + "\n", "small", 2),
    "json time text": ("u.jsonl", json.dumps({"timestamp": SECRET, "input_length": 1,
                                              "output_length": 5}) + "\n", "small", 2),
    "json unknown text": ("v.jsonl", json.dumps({"timestamp": 1, "input_length": 1,
                                                 "output_length": 5, "x": SECRET}) + "\n",
                          "small", 2),
    "json text key": ("w.jsonl", json.dumps({"timestamp": 1, "input_length": 1,
                                             "output_length": 5, SECRET: 3}) + "\n",
                      "small", 0),
    "json text-named key": ("x.jsonl", json.dumps({"timestamp": 1, "input_length": 1,
                                                   "output_length": 5,
                                                   "patient diagnosis prompt": 3}) + "\n",
                            "small", 2),
    "json text pool": ("y.jsonl", json.dumps({"timestamp": 1, "pool": SECRET,
                                              "input_tokens": 1, "output_tokens": 5}) + "\n",
                       None, 2),
    "json list in a count": ("z.jsonl", json.dumps({"timestamp": 1, "input_length": [SECRET],
                                                    "output_length": 5}) + "\n", "small", 2),
    "json not an object": ("z2.jsonl", json.dumps([SECRET]) + "\n", "small", 2),
    "json broken": ("z3.jsonl", '{"timestamp": 1, "input_length": "' + SECRET + '\n', "small",
                    2),
    "a gap and text ids": ("gap.csv", f"{HEAD},replica\n1700000000,small,1,1,patient-a\n"
                                      f"1800000000,small,1,1,diagnosis-b\n", None, 0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_no_printing_path_quotes_text(tmp_path, capsys, case):
    name, text, pool, status = CASES[case]
    f = tmp_path / name
    f.write_text(text)
    out_dir = tmp_path / "rep"
    argv = ["audit", str(EXAMPLE), str(f), "--out", str(out_dir), "--quiet"]
    if pool:
        argv += ["--pool-of", f"{name}={pool}"]
    rc = main(argv)
    got = capsys.readouterr()
    assert rc == status, got.err
    printed = [got.out, got.err] + [p.read_text(errors="replace")
                                    for p in sorted(out_dir.glob("*")) if p.suffix != ".png"]
    if status == 2:
        assert got.err.count("\n") == 1 and f"trace {name}" in got.err
    else:
        assert (out_dir / "report.md").exists() and (out_dir / "audit.json").exists()
    for text_out in printed:
        low = text_out.lower()
        for word in WORDS:
            assert word not in low, (case, text_out)


@pytest.mark.parametrize("value, expected", [
    ("12", "'12'"), ("-4", "'-4'"), ("1e19", "'1e19'"), ("2023-11-16 18:17:03.97",
                                                         "'2023-11-16 18:17:03.97'"),
    ("", "blank"), ("ten", "a text of 3 characters"), (SECRET, "a text of 49 characters"),
    ("9" * 400, "a number of 400 characters"), (True, "true"), (None, "null"), ([1], "a JSON list"),
    ({"a": 1}, "a JSON object"), (2**64, "18446744073709551616"),
    (10**400, "a number of 401 digits"),
])
def test_shown_quotes_numbers_and_times_only(value, expected):
    assert shown(value) == expected


def test_quotable_needs_a_digit_and_no_letters_but_those_of_numbers_and_times():
    assert quotable("2024-09-02T14:00:00Z") and quotable("1.5e3")
    assert not quotable("e") and not quotable("patient 2") and not quotable("x" * 41)
