"""A class release (issue 35): built from the committed lessons, and opened at its own root."""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from schedatrix.classroom.releases.release import uncommitted, write_release
from schedatrix.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin"


def _git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


@pytest.fixture
def course(tmp_path):
    """A git checkout holding a copy of the lessons and solutions, committed."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "course"
    repo.mkdir()
    for name in ("notebooks", "solutions"):
        shutil.copytree(ROOT / name, repo / name,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    _git("init", "-q", cwd=repo)
    _git("add", "-A", cwd=repo)
    _git("commit", "-qm", "course", cwd=repo)
    return repo


def test_a_release_of_committed_lessons_is_written(course, tmp_path):
    assert uncommitted(course / "notebooks", course / "solutions") == []
    files = write_release(tmp_path / "class", course / "solutions", course / "notebooks")
    assert any(p.name == "00_walkthrough.ipynb" for p in files)


def test_a_lesson_autosaved_half_run_is_refused_by_name(course, tmp_path):
    # JupyterLab's autosave wrote a half-run lesson while someone browsed it
    lesson = sorted((course / "notebooks").glob("09_*.ipynb"))[0]
    nb = json.loads(lesson.read_text())
    nb["cells"][0]["source"] = "designs: 58%"
    lesson.write_text(json.dumps(nb))
    with pytest.raises(InputError, match=re.escape(f"notebooks/{lesson.name}")) as e:
        write_release(tmp_path / "class", course / "solutions", course / "notebooks")
    assert "git checkout" in str(e.value) and not (tmp_path / "class").exists()
    # a new, uncommitted solution is named too
    shutil.copy(next((course / "solutions").glob("*.ipynb")), course / "solutions" / "99_x.ipynb")
    assert "solutions/99_x.ipynb" in uncommitted(course / "notebooks", course / "solutions")


def test_a_folder_outside_git_is_released_as_it_is(tmp_path):
    for name in ("notebooks", "solutions"):
        shutil.copytree(ROOT / name, tmp_path / name,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    if subprocess.run(["git", "rev-parse"], cwd=tmp_path, capture_output=True).returncode == 0:
        pytest.skip("the temporary folder lies inside a git checkout here")
    assert uncommitted(tmp_path / "notebooks") == []
    write_release(tmp_path / "class", tmp_path / "solutions", tmp_path / "notebooks")


@pytest.mark.slow
def test_the_release_readme_opens_jupyterlab_at_the_release_root(tmp_path):
    if not (BIN / "jupyter").exists():
        pytest.skip(f"no jupyter in {BIN} (run python3 dev.py lint to make .venv)")
    out = tmp_path / "class"
    write_release(out, ROOT / "solutions", ROOT / "notebooks")
    readme = (out / "README.md").read_text()
    line = next(s.strip() for s in readme.splitlines() if "jupyter lab" in s)
    argv = shlex.split(line)
    assert "--ServerApp.root_dir=." in argv                      # rooted at the release
    assert argv[-1] == "notebooks/00_walkthrough.ipynb" and (out / argv[-1]).is_file()
    argv[0] = str(BIN / "jupyter")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(8)
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    proc = subprocess.Popen(
        [*argv, "--allow-root", "--no-browser", f"--port={port}", f"--ServerApp.token={token}",
         "--ServerApp.port_retries=0", "--ServerApp.ip=127.0.0.1"], cwd=out,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}/api/contents/?content=1&token={token}"
        deadline, listing = time.monotonic() + 90, None
        while listing is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    listing = json.load(r)
            except OSError:
                time.sleep(0.5)
        assert listing is not None, "jupyter lab did not answer within 90 s"
        assert {"notebooks", "exercises", "examples"} <= {i["name"] for i in listing["content"]}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


#: Files a released notebook names that a class is not given, each with the words its lesson
#: uses for them: the workspace's real traces (lesson 06: "if your workspace has them"; the
#: lesson runs without) and the script that picked the walkthrough's seed (the walkthrough
#: names it as how the draw was chosen, nothing to run).
NOT_GIVEN = ("../shared/", "shared/", "tools/calibrate_presets.py")
NAMED = re.compile(r"(?<![\w/.-])((?:\.\./)?(?:[\w.-]+/)+[\w.-]+"
                   r"\.(?:md|py|toml|csv|gz|ipynb|json))")


def test_every_file_a_released_notebook_names_is_the_students(tmp_path):
    """Issue 35: exercise 08 pointed at shared/spec/serving.md, which neither the repository
    nor a release has; the lessons linked ../docs/glossary.md, which a release lacked. Each
    path a lesson or exercise names is in the release (beside the notebook or at its root) or
    in the installed package (schedatrix/...)."""
    import schedatrix

    out = tmp_path / "class"
    write_release(out, ROOT / "solutions", ROOT / "notebooks")
    package = Path(schedatrix.__file__).resolve().parents[1]
    missing, seen = [], 0
    for nb in sorted(out.glob("*/*.ipynb")):
        for path in set(NAMED.findall(nb.read_text())):
            if path.startswith(NOT_GIVEN):
                continue
            seen += 1
            places = [nb.parent / path, out / path, package / path]
            if not any(p.is_file() for p in places):
                missing.append(f"{nb.parent.name}/{nb.name}: {path}")
    assert seen > 40 and not missing, missing
    assert (out / "docs" / "glossary.md").is_file()
    assert "shared/spec" not in (out / "exercises" / "08_kv_capacity.ipynb").read_text()
