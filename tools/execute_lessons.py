#!/usr/bin/env python3
"""Run lessons top to bottom in a fresh kernel and store their outputs, as nbval will compare
them (streams coalesced, widget state kept, each lesson run from its own folder).

    .venv/bin/python tools/execute_lessons.py notebooks/11_serving_failures.ipynb [...]

Writes each notebook back in place and prints, per lesson, the seconds it took and how many code
cells' outputs changed. Exit status 1 when a cell raised (the notebook is then left as it was).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def _outputs(nb) -> list[str]:
    return [json.dumps(c.get("outputs", []), sort_keys=True) for c in nb.cells
            if c.cell_type == "code"]


def execute(path: Path, timeout: int) -> tuple[float, int]:
    nb = nbformat.read(path, as_version=4)
    before = _outputs(nb)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", coalesce_streams=True,
                            store_widget_state=True,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    changed = sum(a != b for a, b in zip(before, _outputs(nb), strict=False))
    nbformat.write(nb, path)
    return seconds, changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--timeout", type=int, default=900, help="seconds a cell may take")
    args = parser.parse_args(argv)
    status = 0
    for path in args.notebooks:
        try:
            seconds, changed = execute(path, args.timeout)
        except CellExecutionError as exc:
            print(f"{path}: a cell raised, left as it was:\n{str(exc)[-2000:]}")
            status = 1
            continue
        print(f"{path}: {seconds:.1f} s, {changed} code cells' outputs changed")
    return status


if __name__ == "__main__":
    sys.exit(main())
