"""Request-trace readers shared by the audit and the serving simulator: formats, the columnar and
plain readers, and the privacy refusals (no prompt text, no quoted personal data).

The entry points are :func:`read_trace` (chunks of checked rows) and :func:`peek_trace`.
"""

from . import threads  # noqa: F401 - first: it sizes pyarrow's allocator before pyarrow loads
from .reader import TraceReader, peek_trace, read_trace

__all__ = ["TraceReader", "peek_trace", "read_trace"]
