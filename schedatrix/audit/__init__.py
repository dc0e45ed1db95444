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

from ..traces.reader import peek_trace, read_trace
from .audit import Audit, PoolAudit, Settings, audit_files, run_audit
from .note import FleetNote, PoolConfig, load_note, parse_note
from .report import markdown, plot_bill, plot_demand, plot_replicas, to_json, verdict, write_report
from .synth import packaged_hour
from .tally import Tally, tally_traces

__all__ = ["Audit", "PoolAudit", "Settings", "audit_files", "run_audit", "FleetNote",
           "PoolConfig", "load_note", "parse_note", "markdown", "plot_bill", "plot_demand",
           "plot_replicas", "to_json", "verdict", "write_report", "packaged_hour", "Tally",
           "tally_traces", "read_trace", "peek_trace"]
