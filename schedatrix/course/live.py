"""A lesson's live controls that say what they are on a page without a kernel.

A widget saved in a notebook shows as its repr (``VBox(children=(...``) when the notebook is
opened without running. :func:`live` wraps a widget so that such a page shows one plain
sentence instead (as HTML and as text), while a running notebook shows the widget itself.
"""

from __future__ import annotations

import html

import ipywidgets as widgets

__all__ = ["Live", "live", "page_text", "page_markdown"]


def page_text(text: str) -> str:
    """``text`` escaped for an HTML output that JupyterLab shows: ``<``, ``&`` and quotes as
    entities, and each dollar sign as ``<span>&#36;</span>`` (JupyterLab's MathJax would read
    two dollar signs in one paragraph as math, and an escaped one still starts it)."""
    return html.escape(text).replace("$", "<span>&#36;</span>")


def page_markdown(text: str):
    """``text`` (Markdown) to display in a lesson with its dollar signs shown as dollars, not
    read by JupyterLab's MathJax as the edges of math ("$0.756 per ... at $1.30" would set the
    words between in italics)."""
    from IPython.display import Markdown

    return Markdown(text.replace("$", "<span>&#36;</span>"))


class Live:
    """A widget plus the sentence a page without a kernel shows in its place."""

    def __init__(self, widget: widgets.Widget, what: str) -> None:
        self.widget = widget
        self.what = what

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        if isinstance(bundle, dict):
            bundle["text/html"] = f"<p><i>{page_text(self.what)}</i></p>"
            bundle["text/plain"] = self.what
        return bundle


def live(widget: widgets.Widget, what: str) -> Live:
    """Display ``widget`` by ending a cell with the result; ``what`` (a sentence, such as
    "Run this cell to pick a window length.") stands in for it on a page without a kernel."""
    return Live(widget, what)
