"""``schedatrix serve``: the walkthrough as a standalone page, with Voila.

The notebooks are not part of the installed package, so the command looks for
``notebooks/00_walkthrough.ipynb`` in the source tree next to this package (a clone with an
editable install: ``pip install -e .``) and, failing that, in the current directory. Voila runs
the notebook in a fresh kernel and shows only its outputs: the live app and the figures.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
from pathlib import Path

from ..errors import InputError

__all__ = ["walkthrough_notebook", "voila_command", "add_serve_parser", "serve"]

NOTEBOOK = Path("notebooks") / "00_walkthrough.ipynb"


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
    """Run Voila on the walkthrough until interrupted; the exit code is Voila's."""
    if importlib.util.find_spec("voila") is None:
        raise InputError("voila is not installed: pip install 'schedatrix[course]' "
                         "(or pip install voila)")
    cmd = voila_command(args.port, walkthrough_notebook(), args.open)
    print(f"serving the walkthrough on http://127.0.0.1:{args.port}/ (Ctrl+C stops it)",
          flush=True)
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:
        return 0


def add_serve_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``serve [--port N] [--open]`` to an argparse subparsers object."""
    p = subparsers.add_parser(
        "serve", help="serve the walkthrough as a standalone page (Voila)",
        description="Serve notebooks/00_walkthrough.ipynb as a standalone page with Voila.",
    )
    p.add_argument("--port", type=int, default=8866, help="localhost port (default 8866)")
    p.add_argument("--open", action="store_true", help="open a browser tab too")
    p.set_defaults(func=serve)
    return p
