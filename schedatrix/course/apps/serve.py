"""``schedatrix serve``: a course page as a standalone page, with Voila.

Two pages: ``walkthrough`` (the default), the live fleet-month walkthrough, and ``design``,
the serving design comparison. Each is a two-cell notebook written to a temporary folder when
the command starts: a line of introduction and the live app. Every figure on it follows the
knobs; a lesson's fixed printouts and plots are not on it. Voila runs the notebook in a fresh
kernel and shows only its outputs. No clone is needed: the installed package is enough.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ...errors import InputError

__all__ = ["PAGE_NAME", "PAGES", "page_notebook", "write_page", "voila_command",
           "add_serve_parser", "serve", "run_voila", "stop", "descendants"]

PAGE_NAME = "walkthrough.ipynb"
_INTRO = (
    "# schedatrix: the fleet-month walkthrough\n\n"
    "Rent a pool of GPU cards for a month: turn a knob and every figure, lamp, sentence and "
    "plot below follows. **Famous month** loads one of the course's incidents or its fix; "
    "**New lottery draw** rents a fresh pool with the same knobs. The course itself (the "
    "notebooks) explains each piece."
)
_APP = "from schedatrix.course.apps.walkthrough import walkthrough\n\nwalkthrough()"
_DESIGN_APP = "from schedatrix.course.apps.design_app import design_page\n\ndesign_page()"


def _design_intro() -> str:
    from .design_app import PAGE_INTRO  # the page's words live with its app

    return PAGE_INTRO


#: Page name -> (what it is, its notebook's file name, its introduction, its app cell).
PAGES = {
    "walkthrough": ("the walkthrough", PAGE_NAME, lambda: _INTRO, _APP),
    "design": ("the serving design page", "serving-design.ipynb", _design_intro, _DESIGN_APP),
}


def _page(page: str) -> tuple:
    if page not in PAGES:
        raise InputError(f"--page {page!r}: allowed: {', '.join(PAGES)}")
    return PAGES[page]


def page_notebook(page: str = "walkthrough") -> dict:
    """A page as a notebook (nbformat 4): the introduction and the app, nothing else."""
    _what, _name, intro, app = _page(page)

    def cell(kind: str, source: str) -> dict:
        out = {"cell_type": kind, "id": kind, "metadata": {}, "source": source}
        if kind == "code":
            out.update(execution_count=None, outputs=[])
        return out

    return {
        "cells": [cell("markdown", intro()), cell("code", app)],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                    "name": "python3"},
                     "language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def write_page(folder: Path, page: str = "walkthrough") -> Path:
    """Write a page's notebook into ``folder``; return its path."""
    path = Path(folder) / _page(page)[1]
    path.write_text(json.dumps(page_notebook(page), indent=1) + "\n")
    return path


def voila_command(port: int, notebook: Path, open_browser: bool = False) -> list[str]:
    """The command line that serves ``notebook`` with Voila on localhost:``port``."""
    if not (isinstance(port, int) and 1 <= port <= 65535):
        raise InputError(f"port must be a whole number from 1 to 65535, got {port!r}")
    cmd = [sys.executable, "-m", "voila", str(notebook), f"--port={port}",
           "--Voila.ip=127.0.0.1", "--theme=light"]
    if not open_browser:
        cmd.append("--no-browser")
    return cmd


def serve(args: argparse.Namespace) -> int:
    """Run Voila on the page until interrupted; the exit code is Voila's."""
    page = getattr(args, "page", "walkthrough")
    what = _page(page)[0]
    if importlib.util.find_spec("voila") is None:
        raise InputError("voila is not installed: pip install 'schedatrix[course]' "
                         "(or pip install voila)")
    with tempfile.TemporaryDirectory(prefix="schedatrix-page-") as folder:
        cmd = voila_command(args.port, write_page(Path(folder), page), args.open)
        print(f"serving {what} on http://127.0.0.1:{args.port}/ (Ctrl+C stops it)",
              flush=True)
        return run_voila(cmd)


#: Signals that stop the page: Voila and its kernels go with it.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: Seconds Voila (then its kernels) get to stop on SIGTERM before they are killed.
GRACE_S = 10.0


def _die_with_parent() -> None:
    """In the child, before Voila starts: SIGTERM when the parent dies, however it dies (a
    SIGKILL too; Linux's PR_SET_PDEATHSIG). Elsewhere nothing: the signal handlers remain."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)   # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, theirs, ...), from /proc; [] where there is none.
    Voila's kernels run in sessions of their own, so killing Voila's group misses them."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:   # a zombie has exited; only its parent's wait is missing
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def stop(proc: subprocess.Popen) -> None:
    """Stop Voila and everything it started: SIGTERM to its process group and to every
    descendant (the kernels), then SIGKILL to whatever is left after :data:`GRACE_S`."""
    below = descendants(proc.pid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, sig)
        for pid in below:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + GRACE_S
        while time.monotonic() < deadline:
            if proc.poll() is not None and not any(_alive(p) for p in below):
                return
            time.sleep(0.1)
    proc.wait()


class _Stopped(Exception):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def run_voila(cmd: list[str]) -> int:
    """Run Voila until it exits or this process gets SIGINT, SIGTERM or SIGHUP; then Voila's
    process group and its kernels stop too (and they stop if this process is killed). The
    exit code is Voila's, 0 after Ctrl+C, 128 + the signal after SIGTERM or SIGHUP."""
    def raise_stopped(signum, _frame):
        raise _Stopped(signum)

    previous = {sig: signal.signal(sig, raise_stopped) for sig in STOP_SIGNALS}
    proc = None
    try:
        proc = subprocess.Popen(cmd, start_new_session=True, preexec_fn=_die_with_parent)
        return proc.wait()
    except (_Stopped, KeyboardInterrupt) as stopped:
        signum = getattr(stopped, "signum", signal.SIGINT)
        return 0 if signum == signal.SIGINT else 128 + signum
    finally:
        for sig in STOP_SIGNALS:   # a second signal now can't cut the stopping short
            signal.signal(sig, signal.SIG_IGN)
        if proc is not None:
            stop(proc)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def add_serve_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``serve [--page NAME] [--port N] [--open]`` to an argparse subparsers object."""
    p = subparsers.add_parser(
        "serve", help="serve a course page standalone (Voila): the walkthrough, or the "
        "serving design page",
        description="Serve a live course page standalone with Voila: the walkthrough (knobs, "
        "readouts, plots) or, with --page design, the serving design comparison.",
    )
    p.add_argument("--page", choices=list(PAGES), default="walkthrough",
                   help="which page (default walkthrough)")
    p.add_argument("--port", type=int, default=8866, help="localhost port (default 8866)")
    p.add_argument("--open", action="store_true", help="open a browser tab too")
    p.set_defaults(func=serve)
    return p
