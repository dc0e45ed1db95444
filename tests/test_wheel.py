"""The package works installed from a wheel, away from the repository: the lessons' files (the
example scenarios, the packaged audit hour) travel inside it, and lesson 12 runs from a folder
outside the checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LESSON = ROOT / "notebooks" / "12_serving_review.ipynb"

pytestmark = pytest.mark.slow


#: The environment every command here runs in: this one's, less what would put the checkout's
#: package first (a PYTHONPATH naming the checkout, as a worktree's test run sets, made the
#: wheel's venv import the checkout: the README's commands then passed without the wheel).
AWAY_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MPLBACKEND")}


def _run(argv, **kw):
    kw.setdefault("env", AWAY_ENV)
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kw)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh virtual environment holding schedatrix from a wheel built here; the packages it
    needs come from this environment's site-packages (added by a .pth file, which brings no
    editable schedatrix: that one is found through a .pth of its own, never processed there)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"   # what the build reads, copied: the checkout gets no build/ folder
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "schedatrix", source / "schedatrix",
                    ignore=shutil.ignore_patterns("__pycache__"))
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                  "-q", "-w", tmp / "dist", source], timeout=300)
    if built.returncode != 0:
        pytest.skip(f"no wheel could be built here: {built.stderr.strip()[-200:]}")
    wheel = next((tmp / "dist").glob("schedatrix-*.whl"))
    venv = tmp / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", venv], timeout=300)
    assert made.returncode == 0, made.stderr
    py = venv / "bin" / "python"
    # this environment's pip installs into that one (pip's --python): no pip of its own needed
    done = _run([sys.executable, "-m", "pip", "--python", py, "install", "--no-deps",
                 "--no-index", "-q", wheel], timeout=300)
    assert done.returncode == 0, done.stderr
    site = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    (Path(site.stdout.strip()) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    away = tmp / "elsewhere"
    away.mkdir()
    return {"wheel": wheel, "python": py, "bin": venv / "bin", "away": away}


def test_the_wheel_carries_the_files_lessons_read(installed):
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    for want in ("schedatrix/examples/serving-accept.toml", "schedatrix/examples/fleet-note.toml",
                 "schedatrix/data/audit_hour_conv.csv.gz"):
        assert want in names, want
    assert not any(n.startswith(("examples/", "tests/", "solutions/")) for n in names)


def test_the_installed_package_is_the_wheels_not_the_checkout(installed):
    where = _run([installed["python"], "-c", "import schedatrix; print(schedatrix.__file__)"],
                 cwd=installed["away"])
    assert where.returncode == 0, where.stderr
    assert str(ROOT) not in where.stdout and "venv" in where.stdout


def test_examples_are_copied_out_by_the_command(installed):
    out = installed["away"] / "mine"
    done = _run([installed["bin"] / "schedatrix", "examples", out], cwd=installed["away"])
    assert done.returncode == 0, done.stderr
    assert (out / "serving-accept.toml").is_file()
    (out / "serving-accept.toml").write_text("# changed\n")
    again = _run([installed["bin"] / "schedatrix", "examples", out], cwd=installed["away"])
    assert again.returncode == 2 and "--force" in again.stderr
    assert (out / "serving-accept.toml").read_text() == "# changed\n"  # nothing lost


def test_lesson_12_runs_from_a_folder_outside_the_repository(installed):
    lesson = installed["away"] / LESSON.name
    shutil.copy(LESSON, lesson)
    code = ("import sys, nbformat; from nbclient import NotebookClient; "
            f"nb = nbformat.read({str(lesson)!r}, as_version=4); "
            "nb.cells.append(nbformat.v4.new_code_cell("
            "'import schedatrix; print(schedatrix.__file__)')); "
            "NotebookClient(nb, timeout=600, kernel_name='python3').execute(); "
            "errors = [o for c in nb.cells if c.cell_type == 'code' "
            "for o in c.get('outputs', []) if o.get('output_type') == 'error']; "
            "import json; print(json.dumps([len(errors), nb.cells[-1].outputs[0]['text']]))")
    done = _run([installed["python"], "-c", code], cwd=installed["away"], timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    errors, where = json.loads(done.stdout.strip().splitlines()[-1])
    assert errors == 0
    assert str(ROOT) not in where and "venv" in where  # the kernel ran the wheel's package


def test_the_readmes_examples_run_from_the_wheel(installed):
    # issue 35: the audit, `serving run --trace` and `serving fit` named schedatrix/data/...,
    # which only a clone has; every README command now reads what `schedatrix examples` copies
    from test_readme import _commands, _expected_status

    home = installed["away"] / "readme"
    home.mkdir()
    where = _run([installed["python"], "-c", "import schedatrix; print(schedatrix.__file__)"],
                 cwd=home)
    assert str(ROOT) not in where.stdout and "venv" in where.stdout   # the wheel's package runs
    for argv in _commands():
        expected = _expected_status(argv)
        argv = [str(home / "out" / a) if k and argv[k - 1] == "--out" else a
                for k, a in enumerate(argv)]
        done = _run([installed["bin"] / "schedatrix", *argv], cwd=home, timeout=900)
        assert done.returncode == expected, (argv, done.stderr[-1500:])
