"""What the harness checks on the way in: its TOML files' tables and keys (each refusal one line
naming the file, the table and what is allowed) and whether a run fits in memory before it
starts."""
