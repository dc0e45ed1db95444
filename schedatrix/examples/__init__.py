"""The example files the README, the docs and the lessons use, shipped inside the package so they
are there in a wheel or a class release too: a fleet note for the audit, and the serving
scenarios (compare, accept, sweep) and a pool of several models to place (plan), plus the
packaged audit hour's two traces (``schedatrix/data/``: generated, in the shape of Azure's LLM
inference trace), which the README's audit, ``serving run --trace`` and ``serving fit`` commands
read.

``path(name)`` gives one file's path; ``write_examples(folder)`` (``schedatrix examples``)
copies them all into a folder of your own to read and change, so that every README command runs
the same from a clone and from a wheel (``examples/fleet-note.toml``,
``examples/audit_hour_conv.csv.gz``, ...).
"""

from __future__ import annotations

import hashlib
import shutil
from functools import cache
from pathlib import Path

from ..errors import InputError

__all__ = ["FOLDER", "names", "path", "write_examples", "is_generated_trace"]

#: Where the example files are, installed or in a checkout.
FOLDER = Path(__file__).resolve().parent
#: Where the packaged traces are (the audit hour), copied out beside the examples.
DATA = FOLDER.parent / "data"


def _files() -> dict[str, Path]:
    found = {p.name: p for p in FOLDER.iterdir() if p.suffix == ".toml"}
    found.update({p.name: p for p in DATA.iterdir() if p.name.endswith(".csv.gz")})
    return found


def names() -> list[str]:
    """The example files' names, sorted (scenario files and the packaged traces)."""
    return sorted(_files())


def path(name: str) -> Path:
    """The path of the example file ``name`` (one of :func:`names`)."""
    files = _files()
    if name not in files:
        raise InputError(f"example: no example file {name!r}; allowed: {', '.join(sorted(files))}")
    return files[name]


def write_examples(folder: str | Path, force: bool = False) -> list[Path]:
    """Copy every example file into ``folder`` (made if missing) and return the new paths. A file
    already there with other contents is kept and refused, unless ``force``."""
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise InputError(f"examples: {str(out)!r} is not a folder")
    files = _files()
    clashes = [n for n, src in sorted(files.items()) if (out / n).exists()
               and (out / n).read_bytes() != src.read_bytes()]
    if clashes and not force:
        raise InputError(f"examples: {str(out)!r} already has other versions of "
                         f"{', '.join(clashes)}; allowed: another folder, or --force to "
                         "overwrite them")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for n, src in sorted(files.items()):
        shutil.copyfile(src, out / n)
        written.append(out / n)
    return written


@cache
def _generated() -> dict[int, frozenset[str]]:
    """The packaged traces' SHA-256 digests by file size (they are generated, not real)."""
    by_size: dict[int, set[str]] = {}
    for p in DATA.iterdir():
        if p.name.endswith(".csv.gz"):
            by_size.setdefault(p.stat().st_size, set()).add(
                hashlib.sha256(p.read_bytes()).hexdigest())
    return {k: frozenset(v) for k, v in by_size.items()}


def is_generated_trace(file: str | Path) -> bool:
    """True when ``file`` holds one of the package's generated traces, byte for byte (the
    packaged hour, wherever it was copied): a replay of it is not real traffic."""
    try:
        size = Path(file).stat().st_size
    except OSError:
        return False
    digests = _generated().get(size)
    if not digests:
        return False
    return hashlib.sha256(Path(file).read_bytes()).hexdigest() in digests
