"""One way to start or join Ray for the sweep, the audit and the grader: Ray's warning tips
hidden, a slow local start tried again, an address where nothing answers refused at once in
one line (Ray itself would retry it for minutes)."""

from __future__ import annotations

import re
import socket
import time
import warnings

import pytest
from conftest import ROOT, run_in_process

from schedatrix.errors import InputError
from schedatrix.serving.sweeps import ray_start


class FakeRay:
    """ray.init and ray.shutdown, recorded; init fails with each of ``failures`` in turn."""

    def __init__(self, *failures: str):
        self.failures, self.calls = list(failures), []

    def init(self, **kw):
        self.calls.append(("init", kw))
        warnings.warn("Tip: a future default", FutureWarning, stacklevel=1)
        if self.failures:
            raise Exception(self.failures.pop(0))  # noqa: TRY002 - Ray raises bare Exceptions

    def shutdown(self):
        self.calls.append(("shutdown", {}))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]          # closed again when the block ends


def test_addresses_with_a_host_and_port_are_the_ones_probed():
    assert ray_start.endpoint("10.0.0.5:6379") == ("10.0.0.5", 6379)
    assert ray_start.endpoint("ray://head:10001") == ("head", 10001)
    assert ray_start.endpoint("[::1]:6379") == ("::1", 6379)
    for name in ("local", "auto", "head", "head:port", ":6379"):
        assert ray_start.endpoint(name) is None, name


def test_a_start_hides_rays_tips_and_passes_its_settings():
    ray = FakeRay()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ray_start.start(ray, "local", "--ray local", num_cpus=2)
    assert ray.calls == [("init", {"address": "local", "num_cpus": 2})]


def test_a_local_start_that_times_out_is_tried_once_more():
    ray = FakeRay("The current node timed out during startup.")
    ray_start.start(ray, "local", "--cluster local")
    assert [c for c, _ in ray.calls] == ["init", "shutdown", "init"]
    twice = FakeRay(*["The current node timed out during startup."] * 2)
    with pytest.raises(InputError, match=r"^--cluster local: can't start or join Ray "
                                         r"\(The current node timed out during startup.\)$"):
        ray_start.start(twice, "local", "--cluster local")
    other = FakeRay("Permission denied: /tmp/ray\nand more lines")
    with pytest.raises(InputError, match=r"^--ray local: can't start or join Ray "
                                         r"\(Permission denied: /tmp/ray\)$"):
        ray_start.start(other, "local", "--ray local")
    assert [c for c, _ in other.calls] == ["init", "shutdown"]   # not a slow start: once


def test_an_address_where_nothing_answers_is_refused_before_ray_is_asked():
    port, ray = _closed_port(), FakeRay()
    with pytest.raises(InputError, match=rf"^--ray 127.0.0.1:{port}: no Ray cluster answers "
                                         rf"at 127.0.0.1:{port} \(.+\); 'local' starts one"):
        ray_start.start(ray, f"127.0.0.1:{port}", f"--ray 127.0.0.1:{port}")
    assert ray.calls == []


@pytest.mark.parametrize("address, says", [
    ("127.0.0.1:99999", "port 99999 is not a port (allowed: 1 to 65535)"),
    ("127.0.0.1:0", "port 0 is not a port (allowed: 1 to 65535)"),
    ("bad..name:6379", "no Ray cluster answers at bad..name:6379"),
])
def test_an_address_that_cannot_be_one_is_refused_in_one_line(address, says):
    with pytest.raises(InputError, match=f"^--ray {re.escape(address)}: {re.escape(says)}"):
        ray_start.reach(address, f"--ray {address}", timeout_s=3)


def test_an_address_that_answers_is_handed_to_ray():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        address = f"127.0.0.1:{server.getsockname()[1]}"
        ray = FakeRay()
        ray_start.start(ray, address, f"--cluster {address}")
    assert ray.calls == [("init", {"address": address})]


def test_without_ray_each_option_says_how_to_install_it(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(InputError, match=r"^--engine ray needs Ray, an optional extra: "
                                         r"pip install 'schedatrix\[cluster\]'$"):
        ray_start.import_ray("--engine ray")


def _one_line_quickly(done, started: float, needle: str) -> None:
    assert done.returncode == 2, done
    assert done.stderr.count("\n") == 1 and needle in done.stderr, done.stderr
    assert time.monotonic() - started < 30, "Ray was left to retry the address"


def test_each_command_refuses_an_address_where_nothing_answers(tmp_path, monkeypatch):
    """Given an address where nothing answers, each command exits 2 with one line at once
    (before, Ray printed a warning every few seconds for minutes)."""
    pytest.importorskip("ray", reason="Ray is the optional 'cluster' extra")
    port = _closed_port()
    where = f"no Ray cluster answers at 127.0.0.1:{port}"
    started = time.monotonic()
    done = run_in_process("serving", "sweep", ROOT / "schedatrix/examples/serving-sweep.toml",
                          "--ray", f"127.0.0.1:{port}", "--out", tmp_path / "sweep", "--quiet")
    _one_line_quickly(done, started, f"--ray 127.0.0.1:{port}: {where}")
    started = time.monotonic()
    done = run_in_process("audit", ROOT / "schedatrix/examples/fleet-note.toml",
                          ROOT / "schedatrix/data/audit_hour_conv.csv.gz",
                          ROOT / "schedatrix/data/audit_hour_code.csv.gz",
                          "--pool-of", "audit_hour_code.csv.gz=large",
                          "--pool-of", "audit_hour_conv.csv.gz=small",
                          "--out", tmp_path / "audit", "--cluster", f"127.0.0.1:{port}",
                          "--quiet")
    _one_line_quickly(done, started, f"--cluster 127.0.0.1:{port}: {where}")
    class_dir = tmp_path / "class" / "alice"
    class_dir.mkdir(parents=True)
    (class_dir / "01_score.ipynb").write_bytes((ROOT / "exercises/01_score.ipynb").read_bytes())
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    started = time.monotonic()
    done = run_in_process("grade", tmp_path / "class", "--engine", "ray")
    _one_line_quickly(done, started,
                      f"--engine ray (RAY_ADDRESS=127.0.0.1:{port}): {where}")
