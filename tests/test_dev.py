"""dev.py course: JupyterLab rooted where every folder the course names can be opened."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import dev_module

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
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
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
