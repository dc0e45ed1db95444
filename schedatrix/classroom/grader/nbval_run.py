"""Inside a grading sandbox: set the limits, drop to the sandbox's user, run nbval.

Run as a script by path (``python .../nbval_run.py [options] NOTEBOOK``), so it imports only
the standard library and pytest: it sets the resource limits, leaves root for the sandbox's
own uid when given one, runs ``pytest --nbval-lax`` on the notebook with the kernel of this
same Python, and writes a short JSON summary of the failed cells to a file descriptor for the
grader. This run is feedback: it can fail a notebook (a cell that raises, a saved output that
differs), never pass one. The grade comes from the grader's own evaluation
(:mod:`~schedatrix.classroom.grader.evaluation`), which the notebook's kernel cannot reach.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys

_TEXT_LIMIT = 4_000
_FAILURES_KEPT = 5


def _limit(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def apply_limits(args: argparse.Namespace) -> None:
    """Resource limits for this process and every process it starts."""
    mib = 1024 * 1024
    _limit(resource.RLIMIT_AS, args.memory_mb * mib)
    _limit(resource.RLIMIT_FSIZE, args.file_mb * mib)
    _limit(resource.RLIMIT_CPU, args.cpu_s)
    _limit(resource.RLIMIT_CORE, 0)
    if args.processes:
        _limit(resource.RLIMIT_NPROC, args.processes)


def add_limit_args(parser: argparse.ArgumentParser) -> None:
    """The options every runner takes from the grader (:func:`..sandbox.limit_args`)."""
    parser.add_argument("--uid", type=int, default=None)
    parser.add_argument("--memory-mb", type=int, required=True)
    parser.add_argument("--file-mb", type=int, required=True)
    parser.add_argument("--cpu-s", type=int, required=True)
    parser.add_argument("--processes", type=int, default=0)


def drop_to(uid: int) -> None:
    """Leave root for ``uid`` (no groups, no capabilities left)."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise SystemExit(f"could not drop to uid {uid}")


class Summary:
    """A pytest plugin that keeps the failed cells' reports."""

    def __init__(self) -> None:
        self.failures: list[dict] = []
        self.ran = 0

    def _keep(self, where: str, text: str) -> None:
        if len(self.failures) < _FAILURES_KEPT:
            self.failures.append({"where": where, "text": text[-_TEXT_LIMIT:]})

    def pytest_runtest_logreport(self, report) -> None:
        if report.when == "call":
            self.ran += 1
        if report.failed:
            self._keep(report.nodeid.rpartition("::")[2], report.longreprtext)

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self._keep("notebook", report.longreprtext)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook")
    add_limit_args(parser)
    parser.add_argument("--cell-timeout-s", type=int, required=True)
    parser.add_argument("--summary-fd", type=int, required=True)
    args = parser.parse_args(argv)

    summary_file = os.fdopen(args.summary_fd, "w", encoding="utf-8")
    apply_limits(args)
    if args.uid is not None:
        drop_to(args.uid)
    # jsonschema's optional IRI format check (rfc3987_syntax) compiles a grammar on import,
    # about 3 s per notebook on a 2-core machine; notebook validation never uses it.
    sys.modules.setdefault("rfc3987_syntax", None)
    import pytest

    plugin = Summary()
    # run by path: its own folder (the package's classroom) is first on the path. Imported
    # here, not at the top, since the evaluation's runner imports this module's helpers
    # from a copy of the package that holds no kernel_start.
    from kernel_start import install as start_kernels_patiently

    start_kernels_patiently()
    with open("pytest.ini", "w", encoding="utf-8") as ini:
        ini.write("[pytest]\n")
    code = pytest.main(
        ["-p", "nbval", "--nbval-lax", "--nbval-current-env", "-q", "-p", "no:cacheprovider",
         "-c", "pytest.ini", "--rootdir", ".", f"--nbval-cell-timeout={args.cell_timeout_s}",
         args.notebook],
        plugins=[plugin],
    )
    used = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    cpu_s = sum(u.ru_utime + u.ru_stime for u in used)  # pytest and the kernel it waited for
    json.dump({"exit": int(code), "ran": plugin.ran, "failures": plugin.failures,
               "cpu_s": round(cpu_s, 3)}, summary_file)
    summary_file.close()
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
