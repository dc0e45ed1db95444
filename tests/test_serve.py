"""``schedatrix serve``: the page notebook, the command line it builds, and a real Voila start
(with, where Chromium is found, the page driven in a browser: a knob turns, the figures follow).
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from browser_support import CHROMIUM_ARGS, POLL_MS, chromium_path

from schedatrix.course.apps import serve
from schedatrix.errors import InputError

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def _parser():
    parser = argparse.ArgumentParser(prog="schedatrix")
    add = parser.add_subparsers(dest="command")
    serve.add_serve_parser(add)
    return parser


def test_parser_defaults_and_func():
    args = _parser().parse_args(["serve"])
    assert args.port == 8866 and args.open is False and args.func is serve.serve
    assert _parser().parse_args(["serve", "--port", "9000", "--open"]).port == 9000


def test_the_page_holds_only_what_follows_the_knobs(tmp_path):
    nb = json.loads(serve.write_page(tmp_path).read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    # One code cell: the app. No fixed printout or plot of the opening month.
    assert len(code) == 1 and code[0]["source"].strip().endswith("walkthrough()")
    assert "print(" not in code[0]["source"] and "plots." not in code[0]["source"]
    assert nb["nbformat"] == 4 and nb["metadata"]["kernelspec"]["name"] == "python3"


def test_command_line(tmp_path):
    page = serve.write_page(tmp_path)
    cmd = serve.voila_command(9001, page)
    assert cmd[:3] == [sys.executable, "-m", "voila"] and str(page) in cmd
    assert "--port=9001" in cmd and "--no-browser" in cmd
    assert "--no-browser" not in serve.voila_command(9001, page, True)


def test_bad_port_names_itself(tmp_path):
    with pytest.raises(InputError, match="port"):
        serve.voila_command(0, serve.write_page(tmp_path))


def test_missing_voila_is_one_clear_error(monkeypatch):
    monkeypatch.setattr(serve.importlib.util, "find_spec", lambda _name: None)
    with pytest.raises(InputError, match="voila is not installed"):
        serve.serve(argparse.Namespace(port=8866, open=False))


def _wait_text(page, css: str, needle: str, timeout_ms: int = 120_000) -> None:
    page.wait_for_function(
        "([css, needle]) => { const el = document.querySelector(css);"
        " return el !== null && el.innerText.includes(needle); }",
        arg=[css, needle], timeout=timeout_ms, polling=POLL_MS)


def _drive(url: str) -> None:
    """Open the page in headless Chromium, check the opening month, turn the shape knob."""
    chromium = chromium_path()
    if chromium is None:
        return
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1100})
            page.goto(url, wait_until="domcontentloaded", timeout=120_000)
            _wait_text(page, ".sx-bill", "$27,170")
            _wait_text(page, ".sx-signature", "111")
            page.screenshot(path=str(ARTIFACTS / "voila-opening.png"), full_page=True)
            plot = "img.sx-month-plot, .sx-month-plot img"
            before = page.locator(plot).first.get_attribute("src")
            page.locator(".sx-knob-shape select").first.select_option("jumpy")
            _wait_text(page, ".sx-bill", "$34,970")
            _wait_text(page, ".sx-warm", "13 of 16")
            # the month's plot arrives after the readout
            page.wait_for_function(
                "([css, before]) => (el => el && el.src != before)(document.querySelector(css))",
                arg=[plot, before], timeout=60_000, polling=POLL_MS)
            page.screenshot(path=str(ARTIFACTS / "voila-jumpy.png"), full_page=True)
            body = page.inner_text("body")
            # Only what follows the knobs: no fixed printout of the opening month.
            assert "tokens per dollar  5.803" not in body
            assert "Mattered vs noise" in body  # the app's own section
        finally:
            browser.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict:
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)   # a forced backend breaks the page's figure cells
    return env


def _page(url: str, needle: str, wait_s: float, per_try_s: float) -> str:
    """The page at ``url`` once it holds ``needle`` (or the last one fetched, after
    ``wait_s``): Voila answers only once its kernel has run the page."""
    deadline, page = time.monotonic() + wait_s, ""
    while time.monotonic() < deadline and needle not in page:
        try:
            with urllib.request.urlopen(url, timeout=per_try_s) as r:
                page = r.read().decode()
        except OSError:
            time.sleep(1)
    return page


@pytest.mark.slow
def test_voila_serves_the_page(tmp_path):
    pytest.importorskip("voila")
    port, env = _free_port(), _env()
    proc = subprocess.Popen(serve.voila_command(port, serve.write_page(tmp_path)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}/"
    try:
        page = _page(url, "widget-view+json", 120, 60)
        assert "application/vnd.jupyter.widget-view+json" in page  # Voila ran the app cell
        assert "the fleet-month walkthrough" in page
        _drive(url)
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
    nb = serve.page_notebook("design")
    kinds = [c["cell_type"] for c in nb["cells"]]
    assert kinds == ["markdown", "code"]
    assert "which serving design" in nb["cells"][0]["source"]
    assert nb["cells"][1]["source"].endswith("design_page()")
    path = serve.write_page(tmp_path, "design")
    assert path.parent == tmp_path and json.loads(path.read_text()) == nb


def test_serve_design_runs_voila_on_the_written_page(monkeypatch):
    seen = {}

    def fake_call(cmd):
        seen["cmd"] = cmd
        seen["page"] = json.loads(open(cmd[3]).read())  # the file exists while Voila runs
        return 0

    monkeypatch.setattr(serve.importlib.util, "find_spec", lambda _name: object())
    monkeypatch.setattr(serve, "run_voila", fake_call)
    assert serve.serve(argparse.Namespace(page="design", port=9002, open=False)) == 0
    assert seen["cmd"][1:3] == ["-m", "voila"] and "--port=9002" in seen["cmd"]
    assert seen["page"] == serve.page_notebook("design")


def test_unknown_page_is_one_clear_error():
    with pytest.raises(InputError, match="--page 'nope'"):
        serve.serve(argparse.Namespace(page="nope", port=8866, open=False))


# -- stopping the page stops Voila and its kernels (issue 19) -----------------------------------

def _start_page(tmp_path):
    """`schedatrix serve --page design` in a process of its own, with the page fetched once
    (so Voila has started a kernel for it): (process, port, the page)."""
    pytest.importorskip("voila")
    port, env = _free_port(), _env()
    proc = subprocess.Popen([sys.executable, "-m", "schedatrix", "serve", "--page", "design",
                             "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env, cwd=tmp_path,
                            start_new_session=True)
    page = _page(f"http://127.0.0.1:{port}/", "widget-view", 180, 90)
    assert "widget-view" in page, "the page never came up"
    return proc, port, page


def _gone(pids, port, timeout=30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in pids if serve._alive(p)]
        with socket.socket() as s:
            listening = s.connect_ex(("127.0.0.1", port)) == 0
        if not alive and not listening:
            return True
        time.sleep(0.5)
    return False


def test_hangup_goes_where_terminate_goes():
    # SIGHUP, SIGTERM and SIGINT take one handler (each real kill below starts a Voila and
    # its kernel: about 10 s of both cores, so SIGHUP rides on SIGTERM's run)
    assert {signal.SIGTERM, signal.SIGHUP, signal.SIGINT} == set(serve.STOP_SIGNALS)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_stopping_serve_stops_voila_and_its_kernels(tmp_path, sig):
    proc, port, page = _start_page(tmp_path)
    below = serve.descendants(proc.pid)
    try:
        # the command served the design page, its app cell run by Voila's kernel
        assert "which serving design?" in page
        assert "application/vnd.jupyter.widget-view+json" in page
        assert len(below) >= 2          # Voila and at least one kernel
        proc.send_signal(sig)           # the parent alone, as a terminal or a supervisor does
        proc.wait(timeout=60)
        assert _gone(below, port), [p for p in below if serve._alive(p)]
    finally:
        for pid in [proc.pid, *below]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
