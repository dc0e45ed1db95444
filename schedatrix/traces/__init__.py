"""Request-trace readers shared by the audit and the serving simulator: formats, the columnar and
plain readers, and the privacy refusals (no prompt text, no quoted personal data).

The entry points are :func:`read_trace` (chunks of checked rows) and :func:`peek_trace`.

The readers (and pyarrow, which they load) are imported on first use, so that the modules
beside them (:mod:`.blocks`, :mod:`.threads`, the formats) cost a process nothing more: the
serving simulator needs pyarrow only to replay a trace file.
"""

from . import threads  # noqa: F401 - first: it sizes pyarrow's allocator before pyarrow loads

__all__ = ["TraceReader", "peek_trace", "read_trace"]


def __getattr__(name: str):
    if name in __all__:
        from . import reader
        return getattr(reader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
