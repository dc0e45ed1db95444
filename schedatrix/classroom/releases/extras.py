"""What the classroom's commands need beyond a plain install, said in one line when it is missing.

A plain ``pip install schedatrix`` has no notebook tools: ``grade`` runs notebooks with nbval
in a kernel, ``make-exercises`` reads and writes them with nbformat. Both come with the ``test``
extra; a command that lacks one stops with a line naming it, as ``serve`` does for voila.
"""

from __future__ import annotations

import importlib.util

from ...errors import InputError

__all__ = ["GRADING", "NOTEBOOKS", "require"]

#: What ``grade`` runs (its sandboxes load nbval and a kernel).
GRADING = ("nbformat", "nbval", "pytest", "ipykernel")
#: What ``make-exercises`` reads and writes notebooks with.
NOTEBOOKS = ("nbformat",)


def require(command: str, modules: tuple[str, ...]) -> None:
    """Raise :class:`InputError` naming the extra to install when ``command`` lacks a module."""
    missing = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a module set to None, or without a spec
            found = False
        if not found:
            missing.append(name)
    if missing:
        raise InputError(f"{command} needs {', '.join(missing)}, which this install lacks: "
                         "pip install 'schedatrix[test]'")
