"""The efficiency audit: a fleet note and a sanitized request trace in, a report out.

    note = load_note("schedatrix/examples/fleet-note.toml")
    audit = audit_files(note, [("code.csv", "large"), ("conv.csv", "small")])
    write_report(audit, "audit-report")

Modules: note (the TOML note), objective, formats (columns and roles), privacy (what a message
may quote), convert (row checks, time bases), blocks (a file's lines in blocks of bytes),
textrows (the plain-Python reference parsers), columnar (pyarrow: CSV, JSON lines, Parquet),
trace (the readers), sparse (keyed counters), tally (streaming counters), histogram, window
(stretches, gaps, pieces), needs (sizing and policies), routing (what-if), audit (the figures),
report (Markdown, PNG, JSON), cluster (Ray), cli (``schedatrix audit``), synth (generated
traces), explorer (widgets).
"""

import importlib

#: Each public name -> the module that defines it, imported on first use, so that a part of
#: the audit (the command line's parser, the note reader) loads without the report's
#: matplotlib or the readers' pyarrow.
_HOME = {"read_trace": "..traces.reader", "peek_trace": "..traces.reader",
         "Audit": ".audit", "PoolAudit": ".audit", "Settings": ".audit",
         "audit_files": ".audit", "run_audit": ".audit",
         "FleetNote": ".note", "PoolConfig": ".note", "load_note": ".note", "parse_note": ".note",
         "markdown": ".report", "plot_bill": ".report", "plot_demand": ".report",
         "plot_replicas": ".report", "to_json": ".report", "verdict": ".report",
         "write_report": ".report", "packaged_hour": ".synth", "Tally": ".tally",
         "tally_traces": ".tally"}

__all__ = list(_HOME)


def __getattr__(name: str):
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
