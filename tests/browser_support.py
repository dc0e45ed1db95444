"""What the browser tests share: Debian's headless Chromium through playwright, the polling of
their waits, and ending the kernels a test started in a JupyterLab."""

from __future__ import annotations

import json
import os
import shutil
import urllib.request

import pytest

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
#: How often a wait's test runs in the page, in ms. Playwright's default runs it at every
#: animation frame, 60 times a second, each forcing a layout of the whole notebook for
#: innerText: most of Chromium's CPU while a lesson runs for a minute.
POLL_MS = 250


def chromium_path() -> str | None:
    """Debian's Chromium, or None where there is none."""
    if os.path.exists("/usr/bin/chromium"):
        return "/usr/bin/chromium"
    return shutil.which("chromium")


def launched_chromium():
    """One headless Chromium (a module-scoped fixture's body: ``yield from`` it); each test
    opens a page of its own, in a fresh browser context. Skips, saying why, without Chromium
    or playwright."""
    path = chromium_path()
    if path is None:
        pytest.skip("no Chromium found (/usr/bin/chromium or `chromium` on PATH): "
                    "apt-get install -y chromium")
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="the playwright Python package is not installed")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS, timeout=60_000)
        try:
            yield browser
        finally:
            browser.close()


def end_sessions(base: str, token: str) -> None:
    """Shut down every kernel of the JupyterLab at ``base``, so the next test runs on quiet
    cores and opens on no tab of this one."""
    with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=30) as r:
        sessions = json.loads(r.read())
    for s in sessions:
        req = urllib.request.Request(f"{base}/api/sessions/{s['id']}?token={token}",
                                     method="DELETE")
        urllib.request.urlopen(req, timeout=30).close()
