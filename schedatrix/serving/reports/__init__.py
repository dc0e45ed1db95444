"""What the studies write for people: tables, Markdown with PNG plots, the decision record and
runbook, the placement plan's lines, and plot labels that never overlap."""
