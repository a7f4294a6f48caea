"""The run history: a results tree recorded as a run (SQLite or PostgreSQL), each drive's
headlines over its runs, trends and step changes."""
