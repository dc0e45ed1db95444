#!/usr/bin/env python3
"""Look at lessons as a learner sees them: JupyterLab in headless Chromium, Run All, then
screenshots of the whole notebook, one viewport at a time.

    .venv/bin/python tools/look_at_lessons.py [LESSON.ipynb ...] [--out artifacts/look]
        [--stored]

Each lesson (default: every notebook in notebooks/) is copied into a temporary root and opened
in JupyterLab (windowing off, so every cell stays in the page); unless ``--stored``, Run All
runs it and the script waits until every code cell has a prompt number. It then scrolls from
the top, saving ``OUT/<lesson>-NN.png`` per viewport, and prints per lesson: cells run, error
outputs seen (a traceback, a stderr output with "Error"), and the screenshots written. Exit
status 1 when a lesson showed an error. Needs Chromium at /usr/bin/chromium (Debian's
package) and the playwright package (the test extra).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_lab(tmp: Path, root: Path) -> tuple[subprocess.Popen, str, str]:
    settings = tmp / "settings" / "@jupyterlab"
    (settings / "apputils-extension").mkdir(parents=True)
    (settings / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    (settings / "notebook-extension").mkdir(parents=True)
    (settings / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
        json.dumps({"windowingMode": "none"}))
    token, port = secrets.token_hex(16), _free_port()
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
               JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"))
    env.pop("MPLBACKEND", None)
    log = open(tmp / "lab.log", "w")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
         f"--port={port}", "--ServerApp.ip=127.0.0.1", f"--ServerApp.token={token}",
         f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0"],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"jupyter lab exited early (log: {tmp / 'lab.log'})")
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                return proc, base, token
        except OSError:
            time.sleep(0.5)
    raise SystemExit("jupyter lab did not answer within 120 s")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def _shut_kernels(base: str, token: str) -> None:
    """Stop every kernel the server runs (a looked-at lesson's kernel would slow the next)."""
    with urllib.request.urlopen(f"{base}/api/kernels?token={token}", timeout=10) as r:
        kernels = json.load(r)
    for k in kernels:
        req = urllib.request.Request(f"{base}/api/kernels/{k['id']}?token={token}",
                                     method="DELETE")
        urllib.request.urlopen(req, timeout=30).close()


def _run_all(page) -> None:
    for _ in range(4):
        select = page.locator(".jp-Dialog button:has-text('Select')")
        if select.count() and select.first.is_visible():
            select.first.click()
        page.click(".lm-MenuBar-itemLabel:text-is('Run')")
        page.click(".lm-Menu-itemLabel:text-is('Run All Cells')")
        try:
            page.wait_for_function(
                "() => [...document.querySelectorAll('.jp-InputPrompt')]"
                ".some(el => /\\[[0-9*]+\\]/.test(el.innerText))", timeout=20_000)
            return
        except Exception:  # noqa: BLE001 - playwright's TimeoutError: try again
            continue
    raise RuntimeError("Run All Cells did not start a cell after 4 tries")


def look(page, base: str, token: str, name: str, out: Path, stored: bool,
         timeout_s: float) -> tuple[int, list[str], int]:
    # a workspace of its own, reset: only this lesson's tab is open
    space = "look-" + Path(name).stem.replace("_", "-")
    page.goto(f"{base}/lab/workspaces/{space}/tree/{name}?reset&token={token}",
              wait_until="domcontentloaded")
    page.wait_for_selector(".jp-Notebook", timeout=90_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                           timeout=90_000)
    page.wait_for_timeout(1_000)
    if not stored:
        _run_all(page)
        # done: no cell waits or runs ("[*]") for three looks a second apart (a folded
        # answer cell hides its prompt, so "every prompt numbered" can't be the test)
        quiet, deadline = 0, time.monotonic() + timeout_s
        while quiet < 3:
            if time.monotonic() > deadline:
                raise TimeoutError(f"still running after {timeout_s:.0f} s")
            busy = page.evaluate(
                "() => [...document.querySelectorAll('.jp-InputPrompt')]"
                ".some(el => el.innerText.includes('[*]'))")
            quiet = 0 if busy else quiet + 1
            page.wait_for_timeout(1_000)
        page.wait_for_timeout(1_000)   # widgets and figures settle
    ran = page.locator(".jp-CodeCell").count()
    errors = page.evaluate(
        "() => [...document.querySelectorAll('.jp-OutputArea-output')]"
        ".filter(el => el.querySelector('[data-mime-type=\"application/vnd.jupyter.stderr\"]')"
        " && /Error|Traceback/.test(el.innerText) || /Traceback \\(most recent/.test("
        "el.innerText)).map(el => el.innerText.slice(0, 300))")
    scroller = ".jp-NotebookPanel .jp-WindowedPanel-outer"
    page.evaluate(f"() => document.querySelector('{scroller}').scrollTo(0, 0)")
    height = page.evaluate(f"() => document.querySelector('{scroller}').scrollHeight")
    view = page.evaluate(f"() => document.querySelector('{scroller}').clientHeight")
    shots, y = 0, 0
    stem = Path(name).stem
    while True:
        page.evaluate(f"() => document.querySelector('{scroller}').scrollTo(0, {y})")
        page.wait_for_timeout(300)
        page.screenshot(path=str(out / f"{stem}-{shots:02d}.png"))
        shots += 1
        y += max(200, view - 80)
        if y >= height or shots >= 60:
            break
    return ran, errors, shots


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("lessons", nargs="*", type=Path)
    p.add_argument("--out", type=Path, default=ROOT / "artifacts" / "look")
    p.add_argument("--stored", action="store_true", help="don't run: show the stored outputs")
    p.add_argument("--timeout", type=float, default=600, help="seconds a lesson may run")
    args = p.parse_args(argv)
    lessons = args.lessons or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for lesson in lessons:
        if not lesson.is_file():
            print(f"look_at_lessons: no notebook {lesson}", file=sys.stderr)
            return 2
    if not Path(CHROMIUM).exists():
        print(f"look_at_lessons: no Chromium at {CHROMIUM} (apt-get install chromium)",
              file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        root = tmp / "root"
        (root / "notebooks").mkdir(parents=True)
        for folder in ("docs",):   # lessons link to docs/
            if (ROOT / folder).is_dir():
                shutil.copytree(ROOT / folder, root / folder)
        for lesson in lessons:
            shutil.copy(lesson, root / "notebooks" / lesson.name)
        proc, base, token = _start_lab(tmp, root)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS,
                                             timeout=60_000)
                for lesson in lessons:
                    page = browser.new_page(viewport={"width": 1400, "height": 1000})
                    page.set_default_timeout(60_000)
                    t0 = time.monotonic()
                    try:
                        ran, errors, shots = look(page, base, token,
                                                  f"notebooks/{lesson.name}", args.out,
                                                  args.stored, args.timeout)
                    except Exception as err:  # noqa: BLE001 - report and go on
                        print(f"{lesson.stem}: FAILED to look ({type(err).__name__}: "
                              f"{str(err).splitlines()[0][:200]})")
                        page.screenshot(path=str(args.out / f"{lesson.stem}-failure.png"))
                        bad += 1
                        page.close()
                        _shut_kernels(base, token)
                        continue
                    print(f"{lesson.stem}: {ran} code cells, {len(errors)} error outputs, "
                          f"{shots} screenshots, {time.monotonic() - t0:.0f} s")
                    for e in errors:
                        print("    error:", " ".join(e.split())[:240])
                    bad += bool(errors)
                    page.close()
                    _shut_kernels(base, token)
                browser.close()
        finally:
            _stop(proc)
    print(f"screenshots in {args.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
