"""Text that fits JupyterLab's output area.

JupyterLab draws printed output in a ``<pre>`` with ``word-break: break-all``: a line wider than
the output area is cut at whatever character reaches the edge, so ``2,050`` can end up as
``2,`` on one line and ``050`` on the next. Measured in headless Chromium on JupyterLab 4 at its
default 13 px monospace font (7.83 px a character): the output area holds 107 characters in a
1,280-pixel-wide window with the file browser open, 127 at 1,440. Everything the library and
the lessons print keeps to :data:`WIDTH` columns, so no number is ever cut on such a screen.
"""

from __future__ import annotations

import textwrap

__all__ = ["WIDTH", "wrap", "wrap_command"]

#: The widest line the library and the lessons print (see the module's docstring).
WIDTH = 100


def wrap(text: str, width: int = WIDTH, hang: int = 4) -> str:
    """``text`` with each of its lines wider than ``width`` wrapped at spaces, never inside a
    word or a number (no break at hyphens either); a wrapped line's continuation is indented
    ``hang`` spaces past the line's own indent. A single word wider than ``width`` is left
    whole. Lines that fit are returned unchanged."""
    if width < 20:
        raise ValueError(f"width: {width!r} is too narrow to wrap text in; allowed: 20 or more")
    out = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[:len(line) - len(line.lstrip(" "))]
        out.extend(textwrap.wrap(line.strip(" "), width=width, initial_indent=indent,
                                 subsequent_indent=indent + " " * hang,
                                 break_long_words=False, break_on_hyphens=False))
    return "\n".join(out)


def wrap_command(line: str, width: int = WIDTH, hang: int = 4) -> str:
    """A shell command line that fits ``width``: broken at spaces, each broken line ending in
    `` \\`` (a shell's line continuation), so the text still pastes into a terminal as one
    command. Break points are spaces outside quotes only where the command has no quotes;
    a command with quotes is left on one line."""
    if len(line) <= width or "'" in line or '"' in line:
        return line
    indent = line[:len(line) - len(line.lstrip(" "))]
    parts = textwrap.wrap(line.strip(" "), width=width - 2, initial_indent=indent,
                          subsequent_indent=indent + " " * hang, break_long_words=False,
                          break_on_hyphens=False)
    return " \\\n".join(parts)
