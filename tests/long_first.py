"""Hand the long files out first: ``python -m pytest -p tests.long_first -n auto --dist loadfile
--no-loadscope-reorder``.

pytest-xdist's ``--dist loadfile`` gives each worker a whole file at a time. By default it hands
the files out by their number of tests, most first, so the files of a few long tests (the
browser tests, the wheel, a notebook of a dozen cells) came last, and a worker could spend the
suite's last minute on one of them while the other had nothing left. This plugin puts every
notebook, and every file holding a test marked ``slow`` or ``browser``, before the rest (each
file's tests in their order, the files in collection order within each group): the many short
tests then fill the end on both workers. With ``--no-loadscope-reorder`` xdist keeps this order.

Used only by the suite (dev.py passes it); it changes the order of files, never what runs.
"""

from __future__ import annotations

#: Markers of a test that takes more than a few seconds.
LONG_MARKERS = ("slow", "browser")


def is_long(nodeid: str, items) -> bool:
    """A notebook, or a file with a test marked slow or browser."""
    return ".ipynb" in nodeid or any(item.get_closest_marker(m) is not None
                                     for item in items for m in LONG_MARKERS)


def pytest_collection_modifyitems(session, config, items):
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    long = [f for f, its in files.items() if is_long(f, its)]
    short = [f for f in files if f not in long]
    items[:] = [item for f in long + short for item in files[f]]
