"""The history of runs: `.stepscope/stepscope.db`, an index of the run folders (stdlib sqlite3).

- `schema`: the tables, versioned with `PRAGMA user_version`, and the migrations between versions.
- `store`: opening the database (WAL, a busy timeout, refusing one of a newer version), writing
  one run's rows in one transaction, reading, resolving a run by a part of its name, deleting.
- `index`: what a run folder says, as the rows of the history (a pure read of its files), and
  `rebuild`, which re-indexes every run folder.

Invariants:
- The run folders are the source of truth (traces, records, results); the database is an index
  of them that `rebuild` can always recreate. Nothing is stored only in the database.
- A run's rows are written by the one process that ran it, once its folder is complete, in one
  transaction: another process sees all of them or none, and a writer killed mid-way leaves the
  database as it was (SQLite's journal rolls the transaction back).
- Several runs may finish at once (two terminals, the editor and a CLI): each writer waits for the
  others (busy timeout) instead of failing, and readers never block writers (WAL).
"""
