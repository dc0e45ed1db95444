"""Beyond one machine: the audit's files tallied as Ray tasks on a local Ray cluster give the
single-machine figures byte for byte; a bad file's error comes back as one line."""

import json
from pathlib import Path

import numpy as np
import pytest

import schedatrix.audit.cluster as cluster
from schedatrix.audit.audit import audit_files
from schedatrix.audit.note import load_note
from schedatrix.audit.report import json_text
from schedatrix.audit.synth import two_pool_trace
from schedatrix.cli import main
from schedatrix.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "schedatrix" / "examples" / "fleet-note.toml"


def _mooncake(path: Path, n: int) -> Path:
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"timestamp": i * 700, "input_length": 300 + i % 900,
                                "output_length": 40, "hash_ids": [i]}) + "\n")
    return path


@pytest.mark.slow
def test_a_local_ray_cluster_gives_the_single_machine_figures(tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'schedatrix[cluster]' "
                                      "(the test extra installs it)")
    files = [(two_pool_trace(tmp_path / f"part{k}.csv", 4000, seed=k), None) for k in range(3)]
    files.append((_mooncake(tmp_path / "small.jsonl", 3000), "small"))   # a relative trace
    bad = tmp_path / "bad.csv"
    bad.write_text("timestamp_s,pool,input_tokens,output_tokens\n1,small,4,5\n2,small,-1,5\n")
    note = load_note(EXAMPLE)
    seen = []
    with cluster.RayRunner("local", num_cpus=2, on_progress=seen.append) as run:
        on_ray = audit_files(note, files, run=run)
        with pytest.raises(InputError) as info:
            audit_files(note, [*files, (bad, None)], run=run)
    assert str(info.value) == "trace bad.csv line 3: input_tokens is a negative number: tokens " \
                              "must be a whole number from 0 to 1,000,000,000, in decimal digits"
    here = audit_files(note, files)
    assert json_text(on_ray) == json_text(here)
    assert sorted(seen[:4]) == [3000, 4000, 4000, 4000]
    assert on_ray.pool("large").n_requests + on_ray.pool("small").n_requests == 15_000
    assert np.isclose(on_ray.t_start_s, here.t_start_s)


def test_without_ray_the_cluster_option_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    def missing():
        raise InputError("--cluster needs Ray: pip install 'schedatrix[cluster]'")

    monkeypatch.setattr(cluster, "_ray", missing)
    f = two_pool_trace(tmp_path / "t.csv", 100)
    assert main(["audit", str(EXAMPLE), str(f), "--out", str(tmp_path / "rep"),
                 "--cluster", "local"]) == 2
    err = capsys.readouterr().err
    assert err == "schedatrix: error: --cluster needs Ray: pip install 'schedatrix[cluster]'\n"


def test_json_prints_every_figure_and_no_progress(tmp_path, capsys):
    f = two_pool_trace(tmp_path / "t.csv", 2000)
    assert main(["audit", str(EXAMPLE), str(f), "--out", str(tmp_path / "rep"), "--json"]) == 0
    out = capsys.readouterr()
    data = json.loads(out.out)
    assert data == json.loads((tmp_path / "rep" / "audit.json").read_text())
    assert data["pools"]["small"]["requests"] + data["pools"]["large"]["requests"] == 2000
    assert out.err == ""
