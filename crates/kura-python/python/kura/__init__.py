"""kura embedded in Python: an analytic SQL database in this process, no server needed.

    import kura
    con = kura.connect("tpch.db")          # or kura.connect() for a throwaway database
    kura.tpch.load(con, sf=0.1)
    con.sql("select l_returnflag, count(*) from lineitem group by 1").fetchall()
    con.sql("select * from nation").df()   # pandas; .arrow() for pyarrow, .pl() for polars
    con.table("nation").filter("n_regionkey = 1").project("n_name").fetchall()
    con.register("people", some_dataframe) # query a DataFrame or Arrow table by name

`Connection.sql` and `Connection.table` give lazy relations (see `kura.relation`): composing
them runs nothing, reading their rows runs the query, again on every read.

PEP 249 (DB-API 2.0): `connect`, `Connection.cursor()`, `Cursor.execute(sql, params)`,
`executemany`, `fetchone/fetchmany/fetchall`, `description`, `rowcount`, and the exception
classes, each error carrying its PostgreSQL SQLSTATE as `.sqlstate`. Parameters are `?`
(qmark) or `$1, $2, ...`. A statement runs with the GIL released; Ctrl-C cancels it.

Transactions: every statement commits by itself unless `BEGIN` (or `Connection.begin()`)
opened a transaction; `commit()` and `rollback()` end it and do nothing when none is open
(as DuckDB's Python API does, not the implicit transaction of PEP 249's default).
"""

import os
import shutil
import tempfile
import weakref

from . import _kura, relation
from ._arrow import arrow_module, to_pandas, to_polars
from ._kura import (  # noqa: F401  (PEP 249's exception classes)
    DatabaseError,
    DataError,
    Error,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    Warning,
)

from .relation import Relation  # noqa: E402

__version__ = _kura.__version__
apilevel = "2.0"
# Threads may share the module, not connections (a connection runs one statement at a time).
threadsafety = 1
paramstyle = "qmark"

__all__ = [
    "connect", "Connection", "Cursor", "Relation", "apilevel", "threadsafety", "paramstyle",
    "Error", "Warning", "InterfaceError", "DatabaseError", "DataError", "OperationalError",
    "IntegrityError", "InternalError", "ProgrammingError", "NotSupportedError",
]


def connect(database=":memory:", *, buffer=None, max_memory=None, config=None):
    """Opens the kura database file `database` (created when missing) in this process.

    `":memory:"` (the default) gives a database in a temporary directory, removed when the
    connection closes. `buffer` and `max_memory` are sizes such as "512MB"; `config` is a dict
    of settings applied with SET (e.g. {"memory_limit": "1GB"}).
    """
    return Connection(database, buffer=buffer, max_memory=max_memory, config=config)


def _description(columns):
    # PEP 249: name, type_code, display_size, internal_size, precision, scale, null_ok.
    return [(name, type_name, None, None, None, None, None) for name, type_name in columns]


def _to_arrow(data):
    """A Python object registered as a table, as something with an Arrow C stream."""
    if hasattr(data, "__arrow_c_stream__"):
        return data
    pa = arrow_module()
    module = type(data).__module__.split(".")[0]
    if module == "pandas":
        return pa.Table.from_pandas(data, preserve_index=False)
    if module == "polars":
        return data.to_arrow()
    if isinstance(data, (pa.Table, pa.RecordBatch, pa.RecordBatchReader)):
        return data
    if isinstance(data, dict):
        return pa.table(data)
    raise ProgrammingError(
        f"cannot register a {type(data).__name__}: give a pandas or polars DataFrame, "
        "a pyarrow Table, or a dict of columns"
    )


class _Rows:
    """Reading one result from a position: what cursors and relations share."""

    def __init__(self, result):
        self._result = result
        self._pos = 0

    @property
    def description(self):
        if self._result is None or not self._result.has_rows:
            return None
        return _description(self._result.columns)

    def _need_rows(self):
        if self._result is None:
            raise ProgrammingError("no statement has been run")
        if not self._result.has_rows:
            raise ProgrammingError(f"the statement returns no rows ({self._result.tag})")
        return self._result

    def fetchone(self):
        r = self._need_rows()
        rows = r.rows(self._pos, 1)
        self._pos += len(rows)
        return rows[0] if rows else None

    def fetchmany(self, size=None):
        r = self._need_rows()
        rows = r.rows(self._pos, self.arraysize if size is None else size)
        self._pos += len(rows)
        return rows

    def fetchall(self):
        r = self._need_rows()
        rows = r.rows(self._pos, max(r.num_rows - self._pos, 0))
        self._pos = r.num_rows
        return rows

    def arrow(self):
        """The remaining rows as a pyarrow Table."""
        r = self._need_rows()
        arrow_module()
        table = r.arrow(self._pos)
        self._pos = r.num_rows
        return table

    fetch_arrow_table = arrow

    def df(self):
        """The remaining rows as a pandas DataFrame (DECIMAL as float64, DATE as datetime64,
        as DuckDB's `df()`); `.arrow().to_pandas()` keeps `Decimal` and `date` objects."""
        return to_pandas(self.arrow())

    fetchdf = df

    def pl(self):
        """The remaining rows as a polars DataFrame (needs polars)."""
        return to_polars(self.arrow())

    def __iter__(self):
        while True:
            row = self.fetchone()
            if row is None:
                return
            yield row


class Cursor(_Rows):
    """A PEP 249 cursor: runs statements on its connection and reads their rows."""

    arraysize = 1

    def __init__(self, connection):
        super().__init__(None)
        self.connection = connection
        self._rowcount = -1
        self._closed = False

    @property
    def rowcount(self):
        return self._rowcount

    def _native(self):
        if self._closed:
            raise InterfaceError("the cursor is closed")
        return self.connection._native_open()

    def execute(self, operation, parameters=None):
        result = self._native().execute(operation, parameters)
        self._result, self._pos = result, 0
        self._rowcount = result.rowcount
        return self

    def executemany(self, operation, seq_of_parameters):
        self._rowcount = self._native().executemany(operation, seq_of_parameters)
        self._result, self._pos = None, 0
        return self

    def close(self):
        self._closed = True
        self._result = None

    def setinputsizes(self, sizes):
        pass

    def setoutputsize(self, size, column=None):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Connection:
    """A kura database open in this process (see `connect`)."""

    def __init__(self, database=":memory:", *, buffer=None, max_memory=None, config=None):
        self._tempdir = None
        if database in (":memory:", "", None):
            self._tempdir = tempfile.mkdtemp(prefix="kura-")
            database = os.path.join(self._tempdir, "memory.db")
        self._native = _kura.Connection(os.fspath(database), buffer, max_memory)
        if self._tempdir is not None:
            self._cleanup = weakref.finalize(self, _close_and_remove, self._native, self._tempdir)
        for name, value in (config or {}).items():
            if not str(name).replace("_", "").isalnum():
                raise ProgrammingError(f"not a setting name: {name!r}")
            text = str(value).replace("'", "''")
            self._native.execute(f"SET {name} = '{text}'")

    def _native_open(self):
        if self._native.closed:
            raise InterfaceError("the connection is closed")
        return self._native

    # PEP 249
    def cursor(self):
        self._native_open()
        return Cursor(self)

    def commit(self):
        if self._native_open().in_transaction:
            self._native.execute("COMMIT")

    def rollback(self):
        if self._native_open().in_transaction:
            self._native.execute("ROLLBACK")

    def close(self):
        if self._tempdir is not None:
            self._cleanup()
        else:
            self._native.close()

    # Conveniences (as sqlite3 and DuckDB have them)
    def begin(self):
        self._native_open().execute("BEGIN")

    def execute(self, sql, parameters=None):
        """Runs `sql` on a new cursor and returns it."""
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql, seq_of_parameters):
        return self.cursor().executemany(sql, seq_of_parameters)

    def sql(self, query, params=None, *, alias=None):
        """A lazy Relation for a query (SELECT, VALUES, WITH, ...): it runs when its rows are
        read, again on every read. Another statement runs now: a Relation holding its rows
        if it returns some (SHOW, EXPLAIN, RETURNING), else None. In a text of several
        statements the ones before the last run now."""
        return relation.query(self, query, params, alias)

    query = sql

    def table(self, name):
        """The table (or view) `name` as a lazy Relation."""
        return relation.table(self, name)

    view = table

    def register(self, name, data):
        """Makes `data` (pandas or polars DataFrame, pyarrow Table, dict of columns)
        queryable as `name` on this connection. Its rows are read now: later changes to
        `data` are not seen (register it again)."""
        self._native_open().register(name, _to_arrow(data))
        return self

    def unregister(self, name):
        self._native_open().unregister(name)
        return self

    def interrupt(self):
        """Stops the statement running on this connection (from another thread)."""
        self._native.interrupt()

    @property
    def closed(self):
        return self._native.closed

    @property
    def in_transaction(self):
        return self._native_open().in_transaction

    @property
    def path(self):
        return None if self._tempdir is not None else str(self._native.path)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if not self._native.closed:
            if exc_type is None:
                self.commit()
            else:
                self.rollback()
        self.close()


def _close_and_remove(native, tempdir):
    native.close()
    shutil.rmtree(tempdir, ignore_errors=True)


from . import tpch  # noqa: E402  (needs Connection)
