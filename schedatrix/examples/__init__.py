"""The example files the README, the docs and the lessons use, shipped inside the package so they
are there in a wheel or a class release too: a fleet note for the audit, and the serving
scenarios (compare, accept, sweep) and a pool of several models to place (plan).

``path(name)`` gives one file's path; ``write_examples(folder)`` (``schedatrix examples``)
copies them all into a folder of your own to read and change.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ..errors import InputError

__all__ = ["FOLDER", "names", "path", "write_examples"]

#: Where the example files are, installed or in a checkout.
FOLDER = Path(__file__).resolve().parent


def names() -> list[str]:
    """The example files' names, sorted."""
    return sorted(p.name for p in FOLDER.iterdir() if p.suffix == ".toml")


def path(name: str) -> Path:
    """The path of the example file ``name`` (one of :func:`names`)."""
    if name not in names():
        raise InputError(f"example: no example file {name!r}; allowed: {', '.join(names())}")
    return FOLDER / name


def write_examples(folder: str | Path, force: bool = False) -> list[Path]:
    """Copy every example file into ``folder`` (made if missing) and return the new paths. A file
    already there with other contents is kept and refused, unless ``force``."""
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise InputError(f"examples: {str(out)!r} is not a folder")
    clashes = [n for n in names() if (out / n).exists()
               and (out / n).read_bytes() != (FOLDER / n).read_bytes()]
    if clashes and not force:
        raise InputError(f"examples: {str(out)!r} already has other versions of "
                         f"{', '.join(clashes)}; allowed: another folder, or --force to "
                         "overwrite them")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for n in names():
        shutil.copyfile(FOLDER / n, out / n)
        written.append(out / n)
    return written
