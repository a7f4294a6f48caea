"""The run history's database: an embedded SQLite file, or a PostgreSQL server a whole lab shares.

Where it is: `--history PATH` or `HISTORY=PATH`, else `<results tree>/history.sqlite` (so
`results/history.sqlite` for the default tree). A value starting with `postgresql://` (or
`postgres://`) is a libpq connection URI: every lab box and the fleet orchestrator then write to
the same server.

Why the standard library's sqlite3 plus psycopg rather than SQLAlchemy: the toolkit speaks a
handful of plain SQL statements that both databases accept as written (types TEXT, BIGINT,
DOUBLE PRECISION; `?` placeholders become psycopg's `%s`), so an ORM would add a large
dependency and a second way of describing the schema without removing any code. The SQLite case,
which is every single-box lab, needs nothing beyond Python; psycopg (with its binary libpq) is
imported only when a PostgreSQL URI is given.

The schema is versioned: `schema_version` holds the number of the last migration applied, and
`MIGRATIONS` lists every migration in order, each a list of statements run in one transaction.
A database written by a newer toolkit (a higher version than this one knows) is refused rather
than misread. Never edit a migration that has shipped: add the next one.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Self

from analysis.core.workspace import Workspace

DEFAULT_NAME = "history.sqlite"
POSTGRES_PREFIXES = ("postgresql://", "postgres://")

# The summary row's columns that get a database column of their own (analysis.rules.cases' standard
# columns, quoted in SQL so that PostgreSQL keeps their case: bw_MBps_mean); any other column of
# a section's table (the sweep columns: is_knee, little_error_pct, ...) is kept in `extra` as
# JSON, so a new sweep column needs no migration.
ROW_TEXT = ("case_name", "rw", "direction", "pct_source")
ROW_NUMBERS = ("bs", "iodepth", "numjobs", "read_pct", "n", "iops_mean", "iops_std", "iops_cv",
               "bw_MBps_mean", "bw_MBps_std", "lat_us_mean", "lat_us_std", "lat_p50_us",
               "lat_p95_us", "lat_p99_us", "lat_p99_9_us", "lat_p50_us_std", "lat_p95_us_std",
               "lat_p99_us_std", "lat_p99_9_us_std", "unstable", "little_product")

RUN_COLUMNS = ("run_id", "run_date", "recorded_at", "tree", "git_revision", "profile", "engine",
               "target", "target_kind", "hostname", "model", "serial", "firmware",
               "capacity_bytes", "kernel", "fio_version", "state", "region_bytes")

MIGRATIONS: list[list[str]] = [
    # 1: runs, their sections' summary rows, their headlines and anomalies.
    [
        """CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            run_date TEXT NOT NULL,          -- ISO 8601 UTC: when the run started
            recorded_at TEXT NOT NULL,       -- when it was (last) recorded
            tree TEXT,                       -- the results tree it was recorded from
            git_revision TEXT, profile TEXT, engine TEXT, target TEXT, target_kind TEXT,
            hostname TEXT, model TEXT, serial TEXT, firmware TEXT, capacity_bytes BIGINT,
            kernel TEXT, fio_version TEXT)""",
        "CREATE INDEX runs_by_device ON runs (serial, run_date)",
        """CREATE TABLE summary_rows (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            section TEXT NOT NULL, table_name TEXT NOT NULL, row_no BIGINT NOT NULL,
            """ + ", ".join(f'"{c}" TEXT' for c in ROW_TEXT) + """,
            """ + ", ".join(f'"{c}" DOUBLE PRECISION' for c in ROW_NUMBERS) + """,
            extra TEXT,                      -- JSON: the section's own (sweep) columns
            PRIMARY KEY (run_id, section, table_name, row_no))""",
        """CREATE TABLE headlines (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            section TEXT NOT NULL, seq BIGINT NOT NULL, kind TEXT NOT NULL, label TEXT,
            text TEXT, value DOUBLE PRECISION, std DOUBLE PRECISION, unit TEXT,
            PRIMARY KEY (run_id, section, seq))""",
        """CREATE TABLE anomalies (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            section TEXT NOT NULL, seq BIGINT NOT NULL, kind TEXT, text TEXT,
            PRIMARY KEY (run_id, section, seq))""",
    ],
    # 2: what makes two runs different measurements (analysis.history.trends keeps them in
    # separate series): the run's --state and region, and a headline's own settings.
    [
        "ALTER TABLE runs ADD COLUMN state TEXT",
        "ALTER TABLE runs ADD COLUMN region_bytes BIGINT",
        "ALTER TABLE headlines ADD COLUMN settings TEXT",
    ],
    # 3: a headline's 95% interval half-width (the trend figures' error bar; std before it)
    [
        "ALTER TABLE headlines ADD COLUMN ci95 DOUBLE PRECISION",
    ],
    # 4: each target's verdict where the run was judged against a lab's targets
    # (analysis.report.targets: tables/targets.json)
    [
        """CREATE TABLE targets (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            seq BIGINT NOT NULL, name TEXT NOT NULL, section TEXT, case_name TEXT,
            direction TEXT, metric TEXT, bound TEXT, threshold DOUBLE PRECISION,
            value DOUBLE PRECISION, low DOUBLE PRECISION, high DOUBLE PRECISION,
            verdict TEXT NOT NULL, failing BIGINT, detail TEXT, origin TEXT,
            PRIMARY KEY (run_id, seq))""",
    ],
]
TARGET_COLUMNS = ("run_id", "seq", "name", "section", "case_name", "direction", "metric",
                  "bound", "threshold", "value", "low", "high", "verdict", "failing", "detail",
                  "origin")
SCHEMA_VERSION = len(MIGRATIONS)


def location(given: str | None, ws: Workspace) -> str:
    """--history, else $HISTORY, else results/history.sqlite for a tree in results/ (the lab's
    drives side by side), else <tree>/history.sqlite."""
    if given or os.environ.get("HISTORY"):
        return given or os.environ["HISTORY"]
    default = (ws.root / "results").resolve()
    tree = ws.results.resolve()
    return str((default if tree.is_relative_to(default) else tree) / DEFAULT_NAME)


class HistoryError(Exception):
    """The history cannot be opened or written; the message says why and what to do."""


def is_postgres(spec: str) -> bool:
    return spec.startswith(POSTGRES_PREFIXES)


def shown(spec: str) -> str:
    """The location for messages, without a password (postgresql://user:secret@host/db)."""
    if not is_postgres(spec):
        return spec
    scheme, _, rest = spec.partition("://")
    auth, at, host = rest.rpartition("@")
    return f"{scheme}://{auth.split(':')[0]}@{host}" if at else spec


class Store:
    """An open history database. Use as a context manager; every write is one transaction."""

    def __init__(self, spec: str, *, create: bool = True):
        self.spec = spec
        self.postgres = is_postgres(spec)
        if self.postgres:
            self.conn = _connect_postgres(spec)
        else:
            path = Path(spec)
            if not path.exists() and not create:
                raise HistoryError(f"no history at {spec}: record a run first "
                                   "(make report, or python -m analysis history add TREE)")
            path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(path, timeout=30)
            self.conn.execute("PRAGMA foreign_keys = ON")
        try:
            self.migrate()
        except Exception:
            self.conn.close()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.conn.close()

    # --- SQL that both databases accept -------------------------------------------------------
    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    def execute(self, sql: str, params: Sequence = ()):
        cur = self.conn.cursor()
        cur.execute(self._sql(sql), tuple(params))
        return cur

    def executemany(self, sql: str, rows: Iterable[Sequence]) -> None:
        rows = [tuple(r) for r in rows]
        if rows:
            self.conn.cursor().executemany(self._sql(sql), rows)

    def query(self, sql: str, params: Sequence = ()) -> list[dict]:
        cur = self.execute(sql, params)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]

    # --- the schema ---------------------------------------------------------------------------
    def version(self) -> int:
        rows = self.execute("SELECT version FROM schema_version").fetchall()
        return int(rows[0][0]) if rows else 0

    def migrate(self) -> None:
        """Apply the migrations this database has not had yet, each in its own transaction."""
        self.execute("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)")
        self.conn.commit()
        if self.postgres:  # two lab boxes opening a new database at once: one migrates
            self.execute("SELECT pg_advisory_lock(1717171717)")
        try:
            if not self.postgres:
                self.execute("BEGIN")  # sqlite3 would run the CREATEs outside a transaction
            current = self.version()
            if current > SCHEMA_VERSION:
                raise HistoryError(
                    f"{shown(self.spec)} has history schema version {current}, newer than this "
                    f"toolkit's {SCHEMA_VERSION}: update the toolkit (git pull) to read it")
            for number in range(current + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[number - 1]:
                    self.execute(statement)
                self.execute("DELETE FROM schema_version")
                self.execute("INSERT INTO schema_version (version) VALUES (?)", (number,))
                self.conn.commit()
            self.conn.commit()  # end the read of the version (SQLite holds a lock until then)
        except Exception:
            self.conn.rollback()
            raise
        finally:
            if self.postgres:
                self.execute("SELECT pg_advisory_unlock(1717171717)")
                self.conn.commit()

    # --- runs ---------------------------------------------------------------------------------
    def record(self, run: dict, rows: list[dict], headlines: list[dict],
               anomalies: list[dict], targets: Sequence[dict] = ()) -> bool:
        """Store one run; a run already stored under its run_id is replaced (one run, however
        often it is recorded). Returns True when it was new."""
        try:
            known = self.execute("SELECT 1 FROM runs WHERE run_id = ?", (run["run_id"],)).fetchall()
            for table in ("summary_rows", "headlines", "anomalies", "targets", "runs"):
                self.execute(f"DELETE FROM {table} WHERE run_id = ?", (run["run_id"],))
            self._insert("runs", [run], RUN_COLUMNS)
            self._insert("summary_rows", rows, ("run_id", "section", "table_name", "row_no",
                                                *ROW_TEXT, *ROW_NUMBERS, "extra"))
            self._insert("headlines", headlines, ("run_id", "section", "seq", "kind", "label",
                                                  "text", "value", "std", "unit", "settings",
                                                  "ci95"))
            self._insert("anomalies", anomalies, ("run_id", "section", "seq", "kind", "text"))
            self._insert("targets", list(targets), TARGET_COLUMNS)
            self.conn.commit()
        except Exception:
            self.conn.rollback()
            raise
        return not known

    def _insert(self, table: str, records: list[dict], columns: Sequence[str]) -> None:
        marks = ", ".join("?" * len(columns))
        names = ", ".join(f'"{c}"' for c in columns)  # quoted: PostgreSQL keeps bw_MBps_mean
        self.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})",
                         ([r.get(c) for c in columns] for r in records))

    def runs(self, device: str | None = None, since: str | None = None) -> list[dict]:
        """Runs in time order, of one device (serial) and from a date on, if given."""
        where, params = [], []
        if device:
            where.append("serial = ?")
            params.append(device)
        if since:
            where.append("run_date >= ?")
            params.append(since)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        return self.query(f"SELECT * FROM runs{clause} ORDER BY run_date, run_id", params)

    def of_runs(self, table: str, run_ids: list[str]) -> list[dict]:
        """The rows of `table` (headlines, anomalies, summary_rows, targets) that belong to the
        runs."""
        if not run_ids:
            return []
        marks = ", ".join("?" * len(run_ids))
        order = {"summary_rows": "table_name, row_no"}.get(table, "seq")
        return self.query(f"SELECT * FROM {table} WHERE run_id IN ({marks}) "
                          f"ORDER BY run_id, section, {order}", run_ids)


def _connect_postgres(spec: str):
    try:
        import psycopg
    except ImportError as e:  # requirements.txt has it; a hand-made venv may not
        raise HistoryError(f"HISTORY={shown(spec)} needs psycopg ({e}); run "
                           "'bash env.bash --install-only' to rebuild .venv") from e
    try:
        return psycopg.connect(spec, connect_timeout=10)
    except psycopg.Error as e:
        raise HistoryError(f"cannot connect to the history at {shown(spec)}: "
                           f"{str(e).strip()}; check the server, the user and the password "
                           "(a ~/.pgpass file keeps it out of HISTORY)") from e


def open_store(spec: str, *, create: bool = True) -> Store:
    try:
        return Store(spec, create=create)
    except sqlite3.Error as e:
        raise HistoryError(f"cannot open the history at {spec}: {e}") from e
