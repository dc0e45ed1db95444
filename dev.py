#!/usr/bin/env python3
"""One entry point for people and CI: set up a local virtual environment, then run a job.

    python3 dev.py course   # open the course in JupyterLab (the walkthrough first; the
                            # lessons read-only, so autosave leaves them as committed)
    python3 dev.py course --edit   # the same, with the lessons and solutions writable
    python3 dev.py test     # the whole test suite (unit, property, notebook, browser tests)
    python3 dev.py app      # the walkthrough as a standalone page (Voila)
    python3 dev.py bench    # the benchmark scripts
    python3 dev.py lint     # ruff
    python3 dev.py exercises  # regenerate exercises/ from solutions/

Needs only Python 3.11+ with pip and venv. The first run creates `.venv/` and installs the
project with its course, test and live extras; later runs reinstall only when pyproject.toml
changed. Set SCHEDATRIX_VENV to use another folder.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("SCHEDATRIX_VENV", ROOT / ".venv"))
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"

#: The whole test suite: unit and property tests, then every lesson and solution notebook
#: checked against its stored outputs by nbval, twice, each time in a fresh kernel (so an
#: output only one run happens to print fails): ``tests/nbval_twice.py`` collects each
#: notebook a second time, as ``NAME.ipynb[again]``, in the same session. (Exercises are
#: graded by tests/, since an untouched exercise must fail.)
#: Every core works (pytest-xdist); a file's tests stay in one worker, so a notebook's cells
#: run in order in one kernel. The long files go out first (``tests/long_first.py``), so the
#: many short tests fill the end on every worker.
PARALLEL = ["-n", "auto", "--dist", "loadfile", "-p", "tests.long_first",
            "--no-loadscope-reorder"]
TEST_ARGS = ["-m", "pytest", "tests", "notebooks", "solutions", "--nbval",
             "--nbval-current-env", "-p", "no:cacheprovider", "-p", "tests.nbval_twice",
             *PARALLEL]


#: The lesson JupyterLab opens first.
WALKTHROUGH = "notebooks/00_walkthrough.ipynb"


#: The contents manager that serves the lessons and solutions read-only, so JupyterLab's
#: autosave never writes a half-run lesson where the suite checks it (see its module).
READ_ONLY_CONTENTS = "schedatrix.course.apps.read_only.CourseContents"


def course_command(as_root: bool = False, edit: bool = False) -> list[str]:
    """`jupyter lab` rooted at the repository, so every folder the course names (notebooks/,
    exercises/, solutions/, docs/) is in the file browser, with the walkthrough open first.
    (Given a file alone, JupyterLab roots itself at the file's folder.) The lessons and
    solutions are read-only unless ``edit``: read, run, Save As elsewhere."""
    return [str(BIN / "jupyter"), "lab", f"--ServerApp.root_dir={ROOT}",
            *([] if edit else [f"--ServerApp.contents_manager_class={READ_ONLY_CONTENTS}"]),
            str(ROOT / WALKTHROUGH), *(["--allow-root"] if as_root else [])]


def say(text: str) -> None:
    print(f"[dev] {text}", flush=True)


def run(*args, **kw) -> int:
    return subprocess.call([str(a) for a in args], cwd=ROOT, **kw)


def ensure_env() -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - dev.py runs before any install
        sys.exit(f"[dev] Python 3.11 or newer is needed, this is {sys.version.split()[0]}")
    stamp = VENV / ".schedatrix-installed"
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if PY.exists() and stamp.exists() and stamp.read_text() == want:
        return
    if not PY.exists():
        say(f"creating a virtual environment in {VENV}")
        venv.EnvBuilder(with_pip=True).create(VENV)
    say("installing schedatrix with its course, test and live extras (first time: a minute or two)")
    pip = [PY, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    target = f"{ROOT}[course,test,live]"
    if not install_with_uv(pip, target):
        say("uv could not install them; pip will (a few minutes)")
        if run(*pip, "-e", target) != 0:
            sys.exit("[dev] pip install failed; see the messages above")
    stamp.write_text(want)


def install_with_uv(pip: list, target: str) -> bool:
    """Install ``target`` (editable) into the venv with uv, which fetches and unpacks the same
    packages in parallel: seconds where pip takes minutes (dev.py's first run was most of a
    clean clone's CI install). False when uv can't (no network to fetch it, a registry it
    can't reach): the caller falls back on pip."""
    if run(*pip, "uv") != 0:
        return False
    env = dict(os.environ)
    if env.get("PIP_CERT") and not env.get("SSL_CERT_FILE"):   # pip's CA bundle, for uv too
        env["SSL_CERT_FILE"] = env["PIP_CERT"]
    env.setdefault("UV_NATIVE_TLS", "1")                      # the system's certificates
    # No --compile-bytecode: compiling all 8,600 modules (a quarter of them Ray's, most never
    # imported here) cost about 45 s of CPU on 2 cores; the processes dev.py starts write the
    # bytecode of what they import instead, once each (child_env)
    return run(PY, "-m", "uv", "pip", "install", "--quiet", "--python", PY,
               "-e", target, env=env) == 0


def child_env() -> dict:
    """The environment of the processes dev.py starts. MPLBACKEND is dropped (a forced backend
    breaks stored figure cells under nbval), and so is PYTHONDONTWRITEBYTECODE, where it is set
    (as on this project's machines): the first process to import a module writes its bytecode
    into .venv or the checkout's git-ignored ``__pycache__``, and every later one (kernels,
    command lines, Ray's workers) reads it instead of compiling the source again. Sandboxed
    grading runs set it again for themselves: they read what the others wrote."""
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def precompile() -> None:
    """Compile the package's modules once (``__pycache__``, git-ignored), before the suite: a
    sandboxed grading run can't write bytecode, and one that started before any other process
    had imported a module would compile it from source again (about 0.5 s for the package)."""
    run(PY, "-m", "compileall", "-q", "-j", "0", ROOT / "schedatrix")


def main(argv: list[str]) -> int:
    jobs = ("course", "test", "app", "bench", "lint", "exercises")
    if not argv or argv[0] not in jobs:
        print(__doc__.strip())
        return 2 if argv else 0
    job, rest = argv[0], argv[1:]
    ensure_env()
    env = child_env()
    if job == "test":
        precompile()
        return run(PY, *TEST_ARGS, *rest, env=env)
    if job == "course":
        as_root = hasattr(os, "geteuid") and os.geteuid() == 0
        edit = "--edit" in rest
        rest = [a for a in rest if a != "--edit"]
        return run(*course_command(as_root, edit), *rest, env=env)
    if job == "app":
        return run(BIN / "schedatrix", "serve", *rest, env=env)
    if job == "exercises":
        return run(BIN / "schedatrix", "make-exercises", *rest)
    if job == "lint":
        return run(BIN / "ruff", "check", ".", *rest)
    status = 0
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        say(f"running {script.name}")
        status |= run(PY, script, *rest, env=env)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
