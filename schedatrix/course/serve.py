"""``schedatrix serve``: a course page as a standalone page, with Voila.

Two pages: ``walkthrough`` (the default), the fleet-month walkthrough, and ``design``, the
serving design comparison. The walkthrough is a notebook in the source tree, so the command
looks for ``notebooks/00_walkthrough.ipynb`` next to this package (a clone with an editable
install: ``pip install -e .``) and, failing that, in the current directory. The design page is
a two-cell notebook (its introduction and the app) written to a temporary folder when the
command starts, so the installed package is enough. Voila runs the notebook in a fresh kernel
and shows only its outputs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import InputError

__all__ = ["walkthrough_notebook", "design_page_notebook", "write_design_page", "PAGES",
           "voila_command", "add_serve_parser", "serve"]

NOTEBOOK = Path("notebooks") / "00_walkthrough.ipynb"
#: Page name -> what it is.
PAGES = {"walkthrough": "the fleet-month walkthrough",
         "design": "the serving design comparison"}
DESIGN_PAGE_NAME = "serving-design.ipynb"


def walkthrough_notebook() -> Path:
    """Where the walkthrough notebook is: the source tree of this package, else the cwd."""
    for root in (Path(__file__).resolve().parent.parent, Path.cwd()):
        path = root / NOTEBOOK
        if path.is_file():
            return path
    raise InputError(
        f"notebook not found: {NOTEBOOK} (run from a clone of schedatrix with an editable "
        "install, or from the folder holding notebooks/)"
    )


def design_page_notebook() -> dict:
    """The design page as a notebook (nbformat 4): its introduction and the app."""
    from .design_app import PAGE_INTRO

    def cell(kind: str, source: str) -> dict:
        out = {"cell_type": kind, "id": kind, "metadata": {}, "source": source}
        if kind == "code":
            out.update(execution_count=None, outputs=[])
        return out

    return {
        "cells": [cell("markdown", PAGE_INTRO),
                  cell("code", "from schedatrix.course.design_app import design_page\n\n"
                               "design_page()")],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                    "name": "python3"},
                     "language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def write_design_page(folder: Path) -> Path:
    """Write the design page notebook into ``folder``; return its path."""
    path = Path(folder) / DESIGN_PAGE_NAME
    path.write_text(json.dumps(design_page_notebook(), indent=1) + "\n")
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


def _run(cmd: list[str], port: int, page: str) -> int:
    print(f"serving {PAGES[page]} on http://127.0.0.1:{port}/ (Ctrl+C stops it)", flush=True)
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:
        return 0


def serve(args: argparse.Namespace) -> int:
    """Run Voila on the page until interrupted; the exit code is Voila's."""
    page = getattr(args, "page", "walkthrough")
    if page not in PAGES:
        raise InputError(f"--page {page!r}: allowed: {', '.join(PAGES)}")
    if importlib.util.find_spec("voila") is None:
        raise InputError("voila is not installed: pip install 'schedatrix[course]' "
                         "(or pip install voila)")
    if page == "design":
        with tempfile.TemporaryDirectory(prefix="schedatrix-page-") as folder:
            cmd = voila_command(args.port, write_design_page(Path(folder)), args.open)
            return _run(cmd, args.port, page)
    return _run(voila_command(args.port, walkthrough_notebook(), args.open), args.port, page)


def add_serve_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``serve [--page NAME] [--port N] [--open]`` to an argparse subparsers object."""
    p = subparsers.add_parser(
        "serve", help="serve a course page standalone (Voila): the walkthrough or the "
        "serving design page",
        description="Serve a course page standalone with Voila: the fleet-month walkthrough "
        "(notebooks/00_walkthrough.ipynb) or, with --page design, the serving design "
        "comparison.",
    )
    p.add_argument("--page", choices=list(PAGES), default="walkthrough",
                   help="which page (default walkthrough)")
    p.add_argument("--port", type=int, default=8866, help="localhost port (default 8866)")
    p.add_argument("--open", action="store_true", help="open a browser tab too")
    p.set_defaults(func=serve)
    return p
