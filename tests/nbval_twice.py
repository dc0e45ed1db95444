"""Collect every notebook twice: ``python -m pytest -p tests.nbval_twice ... --nbval``.

The course's notebooks must pass nbval twice, each time in a fresh kernel, so that a stored
output only one run happens to print (an unseeded draw, a dict's order, a clock) fails the
suite. ``dev.py test`` once ran a second pytest session for the second pass; this plugin puts
the second pass in the same session instead: each notebook is collected a second time as
``notebooks/NAME.ipynb[again]``, its own file node with its own kernel, which pytest-xdist
schedules like any other file (both passes share one collection and one set of workers, and
a worker that is done early takes the other pass's notebooks).

Used only by the suite (dev.py passes ``-p tests.nbval_twice``); a learner's ``pytest
--nbval`` collects each notebook once.
"""

from __future__ import annotations

import pytest

#: What the second copy's node id adds to the notebook's path.
AGAIN = "[again]"


@pytest.hookimpl(trylast=True)
def pytest_collect_file(file_path, parent):
    config = parent.config
    if file_path.suffix != ".ipynb" or not (config.getoption("nbval", False)
                                             or config.getoption("nbval_lax", False)):
        return None
    from nbval.plugin import IPyNbFile

    try:
        rel = file_path.relative_to(config.rootpath).as_posix()
    except ValueError:          # a notebook outside the root: its absolute path
        rel = file_path.as_posix()
    return IPyNbFile.from_parent(parent, path=file_path, nodeid=rel + AGAIN)
