"""``schedatrix serve``: the parser, the command line it builds, and a real Voila start."""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from schedatrix.course import serve
from schedatrix.errors import InputError


def _parser():
    parser = argparse.ArgumentParser(prog="schedatrix")
    add = parser.add_subparsers(dest="command")
    serve.add_serve_parser(add)
    return parser


def test_parser_defaults_and_func():
    args = _parser().parse_args(["serve"])
    assert args.port == 8866 and args.open is False and args.func is serve.serve
    assert _parser().parse_args(["serve", "--port", "9000", "--open"]).port == 9000


def test_finds_the_walkthrough_in_the_clone():
    path = serve.walkthrough_notebook()
    assert path.name == "00_walkthrough.ipynb" and path.is_file()


def test_command_line():
    cmd = serve.voila_command(9001, serve.walkthrough_notebook())
    assert cmd[:3] == [sys.executable, "-m", "voila"]
    assert "--port=9001" in cmd and "--no-browser" in cmd
    assert "--no-browser" not in serve.voila_command(9001, serve.walkthrough_notebook(), True)


def test_bad_port_names_itself():
    with pytest.raises(InputError, match="port"):
        serve.voila_command(0, serve.walkthrough_notebook())


def test_missing_voila_is_one_clear_error(monkeypatch):
    monkeypatch.setattr(serve.importlib.util, "find_spec", lambda _name: None)
    with pytest.raises(InputError, match="voila is not installed"):
        serve.serve(argparse.Namespace(port=8866, open=False))


def test_missing_notebook_is_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(serve, "__file__", str(tmp_path / "pkg" / "serve.py"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="notebook not found"):
        serve.walkthrough_notebook()


@pytest.mark.slow
def test_voila_serves_the_page():
    pytest.importorskip("voila")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)
    proc = subprocess.Popen(serve.voila_command(port, serve.walkthrough_notebook()),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    try:
        deadline, page = time.monotonic() + 120, ""
        while time.monotonic() < deadline and "$27,170" not in page:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=60) as r:
                    page = r.read().decode()
            except OSError:
                time.sleep(1)
        # Voila ran the notebook: its printed readout and the app's widget view are there
        # (the widgets themselves render in the browser: tests/test_browser.py drives those).
        assert "$27,170" in page
        assert "application/vnd.jupyter.widget-view+json" in page
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


# -- the serving design page -------------------------------------------------------------------

def test_page_flag():
    assert _parser().parse_args(["serve"]).page == "walkthrough"
    assert _parser().parse_args(["serve", "--page", "design"]).page == "design"
    with pytest.raises(SystemExit):
        _parser().parse_args(["serve", "--page", "nope"])


def test_design_page_is_intro_and_app(tmp_path):
    nb = serve.design_page_notebook()
    kinds = [c["cell_type"] for c in nb["cells"]]
    assert kinds == ["markdown", "code"]
    assert "which serving design" in nb["cells"][0]["source"]
    assert nb["cells"][1]["source"].endswith("design_page()")
    path = serve.write_design_page(tmp_path)
    assert path.parent == tmp_path and json.loads(path.read_text()) == nb


def test_serve_design_runs_voila_on_the_written_page(monkeypatch):
    seen = {}

    def fake_call(cmd):
        seen["cmd"] = cmd
        seen["page"] = json.loads(open(cmd[3]).read())  # the file exists while Voila runs
        return 0

    monkeypatch.setattr(serve.importlib.util, "find_spec", lambda _name: object())
    monkeypatch.setattr(serve.subprocess, "call", fake_call)
    assert serve.serve(argparse.Namespace(page="design", port=9002, open=False)) == 0
    assert seen["cmd"][1:3] == ["-m", "voila"] and "--port=9002" in seen["cmd"]
    assert seen["page"] == serve.design_page_notebook()


def test_unknown_page_is_one_clear_error():
    with pytest.raises(InputError, match="--page 'nope'"):
        serve.serve(argparse.Namespace(page="nope", port=8866, open=False))


@pytest.mark.slow
def test_voila_serves_the_design_page(tmp_path):
    pytest.importorskip("voila")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)
    proc = subprocess.Popen(serve.voila_command(port, serve.write_design_page(tmp_path)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    try:
        deadline, page = time.monotonic() + 120, ""
        while time.monotonic() < deadline and "widget-view" not in page:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=60) as r:
                    page = r.read().decode()
            except OSError:
                time.sleep(1)
        assert "which serving design?" in page
        assert "application/vnd.jupyter.widget-view+json" in page
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
