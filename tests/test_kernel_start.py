"""A notebook whose first kernel never answers gets a fresh kernel, not a column of errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import nbformat
import pytest
from conftest import finished, isolated_pytest_start

from schedatrix.classroom.grader.kernel_start import ATTEMPTS, KernelRestarted, patient


class _Starts:
    """A stand-in for nbval's RunningKernel that fails its first ``failures`` starts."""

    def __init__(self, failures: int, error=RuntimeError):
        self.failures, self.error, self.calls = failures, error, 0

    def __call__(self, name, cwd=None, startup_timeout=60):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error("Kernel didn't respond in 60 seconds")
        return ("kernel", name, cwd)


def test_a_start_that_times_out_is_tried_again_and_said():
    starts = _Starts(failures=1)
    with pytest.warns(KernelRestarted, match=r"notebooks.*did not come up.*start 2 of 3"):
        kernel = patient(starts)("python3", cwd="notebooks")
    assert kernel == ("kernel", "python3", "notebooks")
    assert starts.calls == 2


def test_a_kernel_that_never_comes_up_still_fails_the_notebook():
    starts = _Starts(failures=ATTEMPTS)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match=f"failed to start {ATTEMPTS} times in a row"):
            patient(starts)("python3", cwd="notebooks")
    assert starts.calls == ATTEMPTS
    assert len([w for w in said if w.category is KernelRestarted]) == ATTEMPTS - 1


def test_only_a_failed_start_is_retried():
    starts = _Starts(failures=1, error=KeyboardInterrupt)
    with pytest.raises(KeyboardInterrupt):
        patient(starts)("python3")
    assert starts.calls == 1
    clean = _Starts(failures=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        patient(clean)("python3")
    assert clean.calls == 1


def test_wrapping_twice_wraps_once_and_bad_attempts_are_named():
    wrapped = patient(_Starts(failures=0))
    assert patient(wrapped) is wrapped
    with pytest.raises(ValueError, match="attempts is 0; allowed: 1 or more"):
        patient(_Starts(failures=0), attempts=0)


_HANGS_ONCE = textwrap.dedent("""\
    # A kernel whose first start stays alive and silent, as the kernel CI once lost was.
    import os, sys, time
    marker = os.environ["HANG_MARKER"]
    if not os.path.exists(marker):
        open(marker, "w").close()
        time.sleep(600)
    os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *sys.argv[1:]])
    """)


def _nbval(tmp_path: Path, *extra: str) -> subprocess.Popen:
    """nbval started on a one-cell notebook, with a kernel whose first start never answers."""
    folder = tmp_path / "kernels" / "hangs-once"
    folder.mkdir(parents=True)
    (tmp_path / "hangs_once.py").write_text(_HANGS_ONCE)
    (folder / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, str(tmp_path / "hangs_once.py"), "-f", "{connection_file}"],
        "display_name": "hangs once", "language": "python"}))
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print(2 + 2)", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="4\n")]
    nb.cells = [cell]
    nbformat.write(nb, tmp_path / "four.ipynb")
    env = {**os.environ, "JUPYTER_PATH": str(tmp_path), "HANG_MARKER": str(tmp_path / "hung")}
    return isolated_pytest_start(tmp_path, "--nbval", "--nbval-kernel-name=hangs-once",
                                 "--nbval-kernel-startup-timeout=5", *extra, "four.ipynb",
                                 env=env)


@pytest.fixture(scope="module")
def hung_runs(tmp_path_factory):
    """Both sessions, with the package's plugin and without, started at once: each spends most
    of its time waiting out a 5 s kernel timeout, so the two waits overlap."""
    runs = {}
    for plugin in ("on", "off"):
        tmp = tmp_path_factory.mktemp(f"plugin-{plugin}")
        extra = ["-p", "no:schedatrix-classroom"] if plugin == "off" else []
        runs[plugin] = (tmp, _nbval(tmp, *extra))
    try:
        yield runs
    finally:
        for _, proc in runs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


@pytest.mark.slow
@pytest.mark.parametrize("plugin", ["on", "off"])
def test_nbval_gets_past_a_kernel_that_never_answers(hung_runs, plugin):
    """With the package's plugin the notebook passes on its second kernel and the summary
    says a kernel was replaced; without it (the control) the same hang fails the cell."""
    tmp_path, proc = hung_runs[plugin]
    done = finished(proc, timeout=300)
    out = done.stdout + done.stderr
    assert (tmp_path / "hung").exists(), out  # the first kernel did hang
    if plugin == "on":
        assert done.returncode == 0, out
        assert "1 passed" in out and "did not come up" in out, out
    else:
        assert done.returncode != 0, out
        assert "Kernel didn't respond in 5 seconds" in out, out
