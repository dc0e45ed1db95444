"""The simulator live: an OpenAI-compatible endpoint served by the model (``serving emulate``),
and a benchmark that drives any such endpoint with the load model (``serving bench``).

The driver (:mod:`.driver`), the approximate tokenizer (:mod:`.tokenizer`) and the bench's
measurements (:mod:`.measure`) are plain Python; the HTTP server (:mod:`.server`), its metrics
(:mod:`.metrics`) and the HTTP client of the bench (:mod:`.bench`) need the ``live`` extra
(``pip install "schedatrix[live]"``).
"""

#: The one line a command prints (exit 2) when the live extra is missing.
MISSING_EXTRA = ('serving {what} needs the live extra: pip install "schedatrix[live]" '
                 '({missing} is not installed)')
