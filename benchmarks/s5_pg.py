"""A throwaway PostgreSQL server for S5: the test suite's own (``tests/pg.py``), imported, not copied.

``tests/pg.py`` runs ``initdb`` into a temporary directory (as the ``postgres``
system user when root) and ``postgres`` on 127.0.0.1 on a free port, stopped at
exit; `Postgres` adds what the benchmark needs: a fresh database per run as a
``--store`` URL, and the CPU the server's processes used. Where PostgreSQL
cannot run (no binaries, no psycopg, root without the ``postgres`` user), the
test helper's skip becomes `PostgresUnavailableError` with its reason, and the PostgreSQL
runs are reported as not run. ``scripts/ensure_postgres.sh`` installs it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLK_TCK = os.sysconf("SC_CLK_TCK")


class PostgresUnavailableError(Exception):
    """PostgreSQL cannot run here; the message says why."""


def _test_helper() -> ModuleType:
    name = "nb_agents_tests_pg"  # not "pg": nothing else on sys.path may answer to it
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "tests", "pg.py"))
        if spec is None or spec.loader is None:
            raise PostgresUnavailableError("tests/pg.py is missing")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


# autovacuum off: its workers' transactions would count as the benchmark's (the database is small)
COUNTING = {
    "shared_preload_libraries": "pg_stat_statements",
    "pg_stat_statements.track": "all",
    "pg_stat_statements.track_planning": "on",  # planning time apart from execution time
    "autovacuum": "off",
}


class Postgres:
    """The running server (started on construction) and its databases.

    With `counting`, a server of its own (not the test helper's shared one)
    that loads ``pg_stat_statements``, for `counts`.
    """

    def __init__(self, *, counting: bool = False) -> None:
        try:
            import pytest  # tests/pg.py reports a missing PostgreSQL as a pytest skip
        except ImportError as exc:
            raise PostgresUnavailableError(f"tests/pg.py needs pytest: {exc}") from None
        self._pg = _test_helper()
        self.counting = counting
        try:
            if counting:
                self.server: Any = self._own_server()
            else:
                self.server = self._pg.server()
        except (pytest.skip.Exception, pytest.fail.Exception) as exc:
            raise PostgresUnavailableError(str(exc)) from None
        self.version = self.server.bindir.parent.name
        if counting:
            self._admin("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")

    def _own_server(self) -> Any:
        bindir = self._pg.find_bindir()
        if bindir is None:
            raise PostgresUnavailableError("no PostgreSQL server binaries (scripts/ensure_postgres.sh)")
        if not (bindir.parent / "lib" / "pg_stat_statements.so").exists():
            raise PostgresUnavailableError(f"no pg_stat_statements in {bindir.parent / 'lib'}")
        srv = self._pg.PgServer(bindir, settings=COUNTING)
        try:
            srv.start()
        except BaseException:
            srv.remove()
            raise
        return srv

    def _admin(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run `sql` on the ``postgres`` database (its statements count in no benchmark database)."""
        import psycopg

        with psycopg.connect(self.server.dsn("postgres"), autocommit=True) as conn:
            cur = conn.execute(sql, params)
            return cur.fetchall() if cur.description else []

    def reset_counts(self) -> None:
        """Forget what `counts` would report so far (the statements; transactions are read as deltas)."""
        self._admin("SELECT pg_stat_statements_reset()")

    def counts(self, dbname: str) -> dict[str, Any]:
        """Statements since `reset_counts` in `dbname` (calls and planning and execution times by
        normalized text), and its transactions
        (committed + rolled back; and the rolled back alone) and connections (sessions) so far, as
        its statistics hold them once flushed."""
        rows = self._admin(
            "SELECT s.query, s.calls, s.total_plan_time, s.total_exec_time FROM pg_stat_statements s "
            "JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s ORDER BY s.calls DESC, s.query",
            (dbname,),
        )
        xact = self._admin(
            "SELECT xact_commit + xact_rollback, sessions, xact_rollback FROM pg_stat_database "
            "WHERE datname = %s",
            (dbname,),
        )
        statements: dict[str, int] = {}
        times: dict[str, tuple[float, float]] = {}  # ms planning, ms executing
        for query, calls, plan_ms, exec_ms in rows:  # a text may have several entries (per user, level)
            statements[query] = statements.get(query, 0) + int(calls)
            was = times.get(query, (0.0, 0.0))
            times[query] = (was[0] + float(plan_ms), was[1] + float(exec_ms))
        return {
            "statements": statements,
            "times": times,
            "transactions": int(xact[0][0]) if xact else 0,
            "connections": int(xact[0][1]) if xact else 0,
            "rollbacks": int(xact[0][2]) if xact else 0,
        }

    def store_url(self) -> str:
        """A new, empty database, as ``postgresql://`` for ``nb-agents serve --store``."""
        dsn = dict(part.split("=", 1) for part in self.server.create_database().split())
        return f"postgresql://{dsn['user']}@{dsn['host']}:{dsn['port']}/{dsn['dbname']}"

    @staticmethod
    def dbname(store_url: str) -> str:
        """The database a `store_url` names."""
        return store_url.rsplit("/", 1)[1]

    def cpu_seconds(self) -> float:
        """CPU seconds of the postmaster, its live backends and its ended (waited-for) children."""
        root = self.server.proc.pid if self.server.proc is not None else None
        if root is None:
            return 0.0
        total = 0.0
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rpartition(")")[2].split()
            except OSError:
                continue  # ended meanwhile: the postmaster's child times below hold it
            pid, ppid = int(entry), int(fields[1])
            if pid == root:
                total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
            elif ppid == root:
                total += int(fields[11]) + int(fields[12])
        return total / CLK_TCK

    def stop(self) -> None:
        if self.counting:
            self.server.remove()
        else:
            self._pg.stop_server()
