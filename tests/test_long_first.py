"""The suite hands out its long files first (tests/long_first.py), and dev.py asks for it."""

from __future__ import annotations

import pytest
from conftest import dev_module
from long_first import pytest_collection_modifyitems


class _Item:
    def __init__(self, nodeid: str, marker: str | None = None):
        self.nodeid, self.marker = nodeid, marker

    def get_closest_marker(self, name):
        return pytest.mark.slow if name == self.marker else None


def test_notebooks_and_files_with_a_slow_or_browser_test_go_first_in_order():
    items = [_Item("tests/test_a.py::one"), _Item("tests/test_a.py::two"),
             _Item("tests/test_b.py::quick"), _Item("tests/test_b.py::long", "slow"),
             _Item("tests/test_c.py::page", "browser"), _Item("tests/test_d.py::x"),
             _Item("notebooks/00.ipynb::Cell 0"), _Item("notebooks/00.ipynb::Cell 1"),
             _Item("notebooks/00.ipynb[again]::Cell 0")]
    before = list(items)
    pytest_collection_modifyitems(None, None, items)
    assert [i.nodeid for i in items] == [
        "tests/test_b.py::quick", "tests/test_b.py::long", "tests/test_c.py::page",
        "notebooks/00.ipynb::Cell 0", "notebooks/00.ipynb::Cell 1",
        "notebooks/00.ipynb[again]::Cell 0",
        "tests/test_a.py::one", "tests/test_a.py::two", "tests/test_d.py::x"]
    assert sorted(map(id, items)) == sorted(map(id, before))   # the same tests, none lost


def test_dev_keeps_that_order_under_xdist():
    args = dev_module().TEST_ARGS
    assert "tests.long_first" in args and "--no-loadscope-reorder" in args
    assert args[args.index("--dist") + 1] == "loadfile"
