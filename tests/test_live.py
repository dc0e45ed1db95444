"""Live controls carry a sentence for pages without a kernel."""

import ipywidgets as widgets

from schedatrix.course.live import live


def test_a_live_widget_keeps_its_view_and_adds_a_sentence():
    box = widgets.VBox([widgets.IntSlider(value=3)])
    bundle = live(box, "Run this cell to move the slider.")._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == box.model_id
    assert bundle["text/plain"] == "Run this cell to move the slider."
    assert "Run this cell" in bundle["text/html"] and "VBox" not in bundle["text/html"]
