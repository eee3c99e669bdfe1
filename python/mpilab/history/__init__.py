"""The results history: an index over many results files in one SQLite database.

A results file stays the unit of truth; the history keeps, per run (one results file), its
context (machine, MPI library and version, launcher, options) and, per measurement, the
launch-level figure, its interval and the launch medians behind it. Trend, change detection
and the report read it (docs/history.md).

db: the database (schema, migrations, add, queries); detect: change detection on one
series; report: the HTML page. The command is mpilab.commands.history.
"""
