"""dev.py course: JupyterLab rooted where every folder the course names can be opened, with the
lessons and solutions read-only (JupyterLab's autosave had left a half-run lesson on disk for
the suite's nbval to fail on)."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from conftest import dev_module
from tornado import web

from schedatrix.course.apps.read_only import READ_ONLY, CourseContents

ROOT = Path(__file__).resolve().parents[1]
dev = dev_module()

#: Folders the lessons send a learner to.
COURSE_FOLDERS = ("notebooks", "exercises", "solutions", "docs")


def test_lab_is_rooted_at_the_repository_and_opens_the_walkthrough():
    cmd = dev.course_command()
    assert cmd[1] == "lab"
    assert f"--ServerApp.root_dir={ROOT}" in cmd
    assert str(ROOT / "notebooks" / "00_walkthrough.ipynb") in cmd
    assert "--allow-root" in dev.course_command(as_root=True)
    for folder in COURSE_FOLDERS:
        assert (ROOT / folder).is_dir()


def test_the_course_opens_the_lessons_read_only_unless_asked_to_edit(monkeypatch):
    manager = f"--ServerApp.contents_manager_class={dev.READ_ONLY_CONTENTS}"
    assert manager in dev.course_command()
    assert manager not in dev.course_command(edit=True)
    module, name = dev.READ_ONLY_CONTENTS.rsplit(".", 1)
    assert f"{module}.{name}" == f"{CourseContents.__module__}.{CourseContents.__name__}"
    assert set(READ_ONLY) == {"notebooks", "solutions"}
    seen = []
    monkeypatch.setattr(dev, "ensure_env", lambda: None)
    monkeypatch.setattr(dev, "run", lambda *a, **_kw: seen.append([str(x) for x in a]) or 0)
    assert dev.main(["course", "--edit", "--port=9999"]) == 0
    assert dev.main(["course"]) == 0
    edited, read = seen
    assert manager not in edited and "--edit" not in edited and "--port=9999" in edited
    assert manager in read


def _course(tmp_path):
    for folder in ("notebooks", "solutions", "exercises"):
        (tmp_path / folder).mkdir()
        nb = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        (tmp_path / folder / "01_x.ipynb").write_text(json.dumps(nb))
    return CourseContents(root_dir=str(tmp_path))


async def _refused(call, *args):
    with pytest.raises(web.HTTPError) as e:
        await call(*args)
    assert e.value.status_code == 403
    assert "read-only" in e.value.log_message and "Save As" in e.value.log_message


def test_lessons_and_solutions_are_never_written_and_say_so(tmp_path):
    import asyncio

    cm = _course(tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*.ipynb")}
    locked = {p: b for p, b in before.items() if "exercises" not in p.parts}

    async def check():
        for folder in ("notebooks", "solutions"):
            path = f"{folder}/01_x.ipynb"
            model = await cm.get(path)
            assert model["writable"] is False          # what JupyterLab reads: no autosave
            assert (await cm.get(folder))["writable"] is False
            assert all(not c["writable"] for c in (await cm.get(folder))["content"])
            model["content"]["cells"].append({"cell_type": "markdown", "id": "a",
                                              "metadata": {}, "source": "half run"})
            await _refused(cm.save, {"type": "notebook", "content": model["content"]}, path)
            await _refused(cm.save, model, f"exercises/../{path}")     # no way round
            await _refused(cm.new_untitled, folder, "notebook")
            await _refused(cm.delete, path)
            await _refused(cm.rename, path, "exercises/moved.ipynb")
            await _refused(cm.rename, "exercises/01_x.ipynb", f"{folder}/02_x.ipynb")
            await _refused(cm.copy, "exercises/01_x.ipynb", folder)
        # the rest is writable as ever: a student's exercise, a copy saved as elsewhere
        ex = await cm.get("exercises/01_x.ipynb")
        assert ex["writable"] is True
        await cm.save({"type": "notebook", "content": ex["content"]}, "exercises/01_x.ipynb")
        await cm.copy("notebooks/01_x.ipynb", "my_copy.ipynb")

    asyncio.run(check())
    assert {p: p.read_bytes() for p in locked} == locked
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.ipynb")
                  if ".ipynb_checkpoints" not in p.parts) == sorted(
        [str(p.relative_to(tmp_path)) for p in before] + ["my_copy.ipynb"])


def test_lesson_01_names_a_folder_the_lab_can_open():
    lesson = (ROOT / "notebooks" / "01_score.ipynb").read_text()
    assert "exercises/01_score.ipynb" in lesson
    assert (ROOT / "exercises" / "01_score.ipynb").is_file()


@pytest.mark.slow
def test_the_running_lab_lists_every_course_folder(tmp_path):
    if not (dev.BIN / "jupyter").exists():
        pytest.skip(f"no jupyter in {dev.BIN} (run python3 dev.py lint to make .venv)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(8)
    # this checkout's package first (a worktree may share another checkout's .venv)
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [
                   os.environ.get("PYTHONPATH")])]))
    proc = subprocess.Popen(
        [*dev.course_command(as_root=True), "--no-browser", f"--port={port}",
         f"--ServerApp.token={token}", "--ServerApp.port_retries=0",
         "--ServerApp.ip=127.0.0.1"],
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
        names = {item["name"] for item in listing["content"]}
        assert set(COURSE_FOLDERS) <= names
        # the lessons are served read-only (JupyterLab does not autosave them) and a write
        # is refused; the exercises are the student's to write
        def model(path):
            with urllib.request.urlopen(f"{base}/{path}?content=0&token={token}") as r:
                return json.load(r)

        base = f"http://127.0.0.1:{port}/api/contents"
        assert model("notebooks/00_walkthrough.ipynb")["writable"] is False
        assert model("solutions")["writable"] is False
        assert model("exercises/01_score.ipynb")["writable"] is True
        probe = ROOT / "notebooks" / "zz_autosave_probe.ipynb"
        body = json.dumps({"type": "notebook", "content": {
            "cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}}).encode()
        put = urllib.request.Request(f"{base}/notebooks/{probe.name}?token={token}",
                                     data=body, method="PUT")
        try:
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(put, timeout=30)
            assert refused.value.code == 403
            assert not probe.exists()
        finally:
            probe.unlink(missing_ok=True)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


def test_the_suites_processes_write_the_bytecode_of_what_they_import(monkeypatch):
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("MPLBACKEND", "agg")
    env = dev_module().child_env()
    assert "PYTHONDONTWRITEBYTECODE" not in env and "MPLBACKEND" not in env
    assert os.environ["PYTHONDONTWRITEBYTECODE"] == "1"     # dev.py's own is left alone
    assert env["PATH"] == os.environ["PATH"]
