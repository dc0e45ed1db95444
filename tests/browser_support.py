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


#: Every number (digits with their commas, points, a leading $ and a trailing %) under the
#: elements matching a selector whose characters the page draws on more than one line: a
#: JupyterLab or Voila output cut "2,050" into "2," and "050" (issue 35).
_SPLIT_NUMBERS = """(css) => {
  const split = [];
  let seen = 0;
  for (const root of document.querySelectorAll(css)) {
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      for (const m of node.textContent.matchAll(/[$]?\\d[\\d,.]*\\d%?|[$]?\\d%?/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const lines = new Set([...range.getClientRects()].filter(r => r.width > 0)
                              .map(r => Math.round(r.top)));
        seen += 1;
        if (lines.size > 1) split.push(m[0]);
      }
    }
  }
  return [seen, split];
}"""


def split_numbers(page, css: str = "body") -> tuple[int, list[str]]:
    """How many numbers the page shows under ``css``, and those it breaks over two lines
    (see ``_SPLIT_NUMBERS``)."""
    seen, split = page.evaluate(_SPLIT_NUMBERS, css)
    return seen, split
