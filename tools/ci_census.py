"""Where a clean clone's CI spends its CPU: ``sudo python3 tools/ci_census.py [--keep DIR]``.

It clones this checkout's HEAD into a new folder (beside a copy of ``../shared`` when there is
one), runs ``CI=true bash .ci/run`` there with pytest's JUnit report, and records every process
the run starts: Linux's process accounting (``acct(2)``, root only) writes each process's CPU
time when it exits, and a sampler reads each new process's command line from ``/proc`` four
times a second. Then it prints the run's wall time and CPU, that CPU by kind of process (the
notebooks' kernels under nbval, the browser tests' Chromium and servers, grading, the command
line by subcommand, ...), and the test files by the seconds their tests took in a worker.

A process that lives under a quarter of a second may be missed by the sampler; its CPU is
still counted (accounting sees every exit), under its parent's kind or as "short-lived".
Accounting covers the whole machine, so only the run's own processes are counted: those whose
parents lead back to it. Nothing here is a test: the suite's CI is what it measures.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = 64                 # bytes of one acct_v3 record
TICKS = 100                 # acct's clock ticks per second (AHZ)


def comp_t(value: int) -> int:
    """acct's comp_t: a 13-bit mantissa and a 3-bit base-8 exponent."""
    return (value & 0x1FFF) << (3 * ((value >> 13) & 7))


def records(data: bytes) -> list[dict]:
    """The acct_v3 records of an accounting file: pid, ppid, cpu (seconds), comm."""
    out = []
    for off in range(0, len(data) - RECORD + 1, RECORD):
        r = data[off:off + RECORD]
        if r[1] != 3:       # ac_version
            raise ValueError(f"accounting record at byte {off}: version {r[1]}, expected 3")
        pid, ppid = struct.unpack_from("<II", r, 16)
        utime, stime = struct.unpack_from("<HH", r, 32)
        comm = r[48:64].split(b"\0")[0].decode(errors="replace")
        out.append({"pid": pid, "ppid": ppid, "cpu": (comp_t(utime) + comp_t(stime)) / TICKS,
                    "comm": comm})
    return out


#: (what a command line holds, its kind), first match wins; kernels are placed by ancestors.
KINDS = [
    ("chrom", "Chromium (browser tests)"),
    ("/proc/self/exe --type=", "Chromium (browser tests)"),
    ("run-driver", "playwright's driver (browser tests)"),
    ("evaluate_run.py", "grading: the grader's evaluation"),
    ("nbval_run.py", "grading: a notebook's own run"),
    ("bwrap", "grading: a notebook's own run"),
    ("-p no:cacheprovider -c", "isolated pytest sessions (nbval-lax, plugin tests)"),
    ("jupyter-lab", "JupyterLab servers (browser tests)"),
    ("jupyter lab", "JupyterLab servers (browser tests)"),
    ("jupyter_builder", "JupyterLab servers (browser tests)"),
    ("voila", "Voila servers (browser tests, serve)"),
    ("exec(eval(sys.stdin.readline()))", "pytest workers: tests in process"),
    ("raylet", "Ray"), ("gcs_server", "Ray"), ("ray", "Ray"),
    ("-m pytest", "pytest main"),
    ("setuptools", "install (the suite's, the wheel test's)"),
    ("/uv ", "install (the suite's, the wheel test's)"),
    ("-m venv", "install (the suite's, the wheel test's)"),
    ("-m pip", "install (the suite's, the wheel test's)"),
    ("__pip-runner__", "install (the suite's, the wheel test's)"),
    ("ensurepip", "install (the suite's, the wheel test's)"),
    ("compileall", "install (the suite's, the wheel test's)"),
]
KERNEL_HOMES = [
    ("evaluate_run.py", "grading: a notebook's own run"),
    ("nbval_run.py", "grading: a notebook's own run"),
    ("bwrap", "grading: a notebook's own run"),
    ("-p no:cacheprovider -c", "isolated pytest sessions (nbval-lax, plugin tests)"),
    ("jupyter-lab", "kernels in JupyterLab (browser tests)"),
    ("jupyter lab", "kernels in JupyterLab (browser tests)"),
    ("voila", "kernels in Voila (browser tests, serve)"),
    ("exec(eval(sys.stdin.readline()))", "notebook kernels under nbval (both passes)"),
]


def cli_kind(command: str) -> str | None:
    """'command line: serving compare' for ``python -m schedatrix serving compare ...``."""
    for marker in (" -m schedatrix ", "/bin/schedatrix "):
        if marker in command:
            words = command.split(marker, 1)[1].split()
            sub = [w for w in words[:2] if not w.startswith("-") and "/" not in w
                   and "." not in w]
            if words and words[0] == "serving":
                sub = sub[:2]
            else:
                sub = sub[:1]
            return "command line: schedatrix " + " ".join(sub)
    return None


def kind_of(pid: int, commands: dict[int, str], parents: dict[int, int]) -> str:
    """The kind of one process from its command line, or its ancestors' for a kernel or a
    process the sampler never saw."""
    command = commands.get(pid, "")
    chain, p = [], parents.get(pid)
    for _ in range(8):
        if p is None or p in chain:
            break
        chain.append(p)
        p = parents.get(p)
    if "ipykernel" in command:
        for ancestor in chain:
            for needle, kind in KERNEL_HOMES:
                if needle in commands.get(ancestor, ""):
                    return kind
        return "kernels elsewhere"
    cli = cli_kind(command)
    if cli:
        return cli
    for needle, kind in KINDS:
        if needle in command:
            return kind
    if not command:
        for ancestor in chain:
            if ancestor in commands:
                return kind_of(ancestor, commands, parents)
        return "short-lived"
    return "other: " + command[:60]


class Sampler(threading.Thread):
    """Every new process's command line and parent, four times a second."""

    def __init__(self):
        super().__init__(daemon=True)
        self.commands: dict[int, str] = {}
        self.parents: dict[int, int] = {}
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            for name in os.listdir("/proc"):
                if not name.isdigit() or int(name) in self.commands:
                    continue
                try:
                    raw = Path(f"/proc/{name}/cmdline").read_bytes()
                    stat = Path(f"/proc/{name}/stat").read_text()
                except OSError:
                    continue
                if raw:
                    self.commands[int(name)] = raw.replace(b"\0", b" ").decode(
                        errors="replace")[:400]
                    self.parents[int(name)] = int(stat[stat.rindex(")") + 2:].split()[1])
            self.halt.wait(0.25)


def descendants(root: int, parents: dict[int, int]) -> set[int]:
    children = collections.defaultdict(list)
    for pid, ppid in parents.items():
        children[ppid].append(pid)
    seen, todo = {root}, [root]
    while todo:
        for child in children[todo.pop()]:
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def junit_files(path: Path) -> list[tuple[float, int, str]]:
    """(worker seconds, tests, file or notebook) from a JUnit report, most seconds first."""
    seconds, count = collections.Counter(), collections.Counter()
    for case in ET.parse(path).iter("testcase"):
        name = case.get("classname", "")
        key = name if ".ipynb" in name else ".".join(name.split(".")[:2])
        seconds[key] += float(case.get("time", 0))
        count[key] += 1
    return sorted(((s, count[k], k) for k, s in seconds.items()), reverse=True)


def _acct(path: bytes | None) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.acct(path) != 0:
        err = ctypes.get_errno()
        raise SystemExit(f"ci_census: process accounting could not be switched "
                         f"{'on' if path else 'off'}: {os.strerror(err)} (it needs root on "
                         "Linux)")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", type=Path, help="run in this new folder and keep it (default: "
                    "a temporary folder, removed after)")
    ap.add_argument("--top", type=int, default=25, help="test files to list (default 25)")
    args = ap.parse_args(argv)
    if not sys.platform.startswith("linux"):
        raise SystemExit("ci_census: needs Linux (process accounting and /proc)")
    if os.geteuid() != 0:
        raise SystemExit("ci_census: needs root for process accounting (acct(2)): "
                         "sudo python3 tools/ci_census.py")
    if args.keep and args.keep.exists():
        raise SystemExit(f"ci_census: --keep {args.keep}: already exists; give a new folder")
    work = args.keep or Path(tempfile.mkdtemp(prefix="ci-census-"))
    work.mkdir(parents=True, exist_ok=True)
    clone = work / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    shared = ROOT.parent / "shared"
    if shared.is_dir():
        shutil.copytree(shared, work / "shared", symlinks=True)
    pacct, junit = work / "pacct", work / "junit.xml"
    pacct.touch()
    sampler = Sampler()
    sampler.start()
    _acct(str(pacct).encode())
    env = dict(os.environ, CI="true", PYTEST_ADDOPTS=f"--junitxml={junit}")
    t0 = time.monotonic()
    try:
        with open(work / "ci.log", "w") as log:
            proc = subprocess.Popen(["bash", ".ci/run"], cwd=clone, env=env, stdout=log,
                                    stderr=subprocess.STDOUT)
            rc = proc.wait()
    finally:
        wall = time.monotonic() - t0
        _acct(None)
        sampler.halt.set()
        sampler.join()
    recs = records(pacct.read_bytes())
    parents = dict(sampler.parents)
    for r in recs:
        parents.setdefault(r["pid"], r["ppid"])
    ours = descendants(proc.pid, parents)
    by_kind = collections.defaultdict(lambda: [0, 0.0])
    for r in recs:
        if r["pid"] in ours:
            kind = kind_of(r["pid"], sampler.commands, parents)
            by_kind[kind][0] += 1
            by_kind[kind][1] += r["cpu"]
    cpu = sum(v[1] for v in by_kind.values())
    print(f".ci/run exited {rc} after {wall:.0f} s wall; its processes used {cpu:.0f} CPU-s "
          f"({cpu / wall:.2f} cores on average, {os.cpu_count()} here)")
    print(f"{'CPU-s':>8} {'share':>6} {'procs':>6}  kind")
    for kind, (n, s) in sorted(by_kind.items(), key=lambda kv: -kv[1][1]):
        print(f"{s:8.1f} {s / cpu:6.1%} {n:6d}  {kind}")
    if junit.exists():
        print(f"\n{'worker-s':>8} {'tests':>6}  test file or notebook (pass)")
        for s, n, name in junit_files(junit)[:args.top]:
            print(f"{s:8.1f} {n:6d}  {name}")
    print(f"\nkept in {work}" if args.keep else "")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
