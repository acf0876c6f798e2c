"""SQLAlchemy 2 (psycopg 3) and pandas against kura's PostgreSQL protocol:
connect without AUTOCOMMIT, the inspector, pd.read_sql, DataFrame.to_sql of
--rows rows of ints, floats, decimals, text, dates, timestamps and NULLs read
back equal (with its rate), and begin_nested. What kura cannot answer yet is a
'gap': it must be refused with a clear error (SQLSTATE 0A000 or 42P01), never
answered wrongly; a gap that starts to work must answer correctly. Prints
'N passed, N failed'; exits non-zero on a failure."""

import argparse
import datetime
import decimal
import math
import sys
import time

import numpy as np
import pandas as pd
import sqlalchemy as sa

results = {"passed": 0, "failed": 0}
# SQLSTATEs of a clear refusal: feature not supported, undefined table.
REFUSALS = ("0A000", "42P01")


def check(name, fn):
    try:
        fn()
        results["passed"] += 1
        print(f"ok   {name}")
    except Exception as e:  # report every failure, keep going
        results["failed"] += 1
        print(f"FAIL {name}: {e!r}"[:2000])


def gap(name, fn, verify):
    """Runs fn: a clear refusal is a known gap (passes, reported); an answer
    must pass verify."""
    try:
        out = fn()
    except sa.exc.DBAPIError as e:
        state = getattr(e.orig, "sqlstate", None)
        if state in REFUSALS:
            results["passed"] += 1
            first = str(e.orig).splitlines()[0]
            print(f"gap  {name}: refused ({state}): {first}"[:300])
            return
        results["failed"] += 1
        print(f"FAIL {name}: not a clear refusal: {e!r}"[:2000])
        return
    except Exception as e:
        results["failed"] += 1
        print(f"FAIL {name}: {e!r}"[:2000])
        return
    check(name, lambda: verify(out))


def frame(n):
    """n rows of every common type, with NULLs in each nullable column."""
    rng = np.random.default_rng(7)
    i = np.arange(n, dtype=np.int64)
    f = rng.normal(size=n) * 1e6
    f[::13] = np.nan
    base = datetime.date(1990, 1, 1)
    start = datetime.datetime(2020, 1, 1)
    return pd.DataFrame(
        {
            "i": i,
            "n": pd.array([None if k % 11 == 0 else k * 3 - 5 for k in range(n)], dtype="Int64"),
            "f": f,
            "d": [None if k % 17 == 0 else decimal.Decimal(k * 7 - 3000) / 100 for k in range(n)],
            "t": [None if k % 7 == 0 else f"row {k} é {'x' * (k % 30)}" for k in range(n)],
            "dt": [None if k % 19 == 0 else base + datetime.timedelta(days=k % 20000) for k in range(n)],
            "ts": pd.to_datetime(
                [None if k % 23 == 0 else start + datetime.timedelta(seconds=k * 37, microseconds=k % 1000) for k in range(n)]
            ),
        }
    )


def plain(v):
    """A value in a form both sides compare equal in: NULL-likes as None,
    numpy and pandas scalars as Python ones."""
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, pd.Timestamp):
        return v.to_pydatetime()
    if isinstance(v, np.generic):
        return plain(v.item())
    return v


def checks(port, rows):
    url = f"postgresql+psycopg://tester@127.0.0.1:{port}/kura"
    # No isolation_level: SQLAlchemy's own transactions, as applications use it.
    engine = sa.create_engine(url)

    def connect():
        with engine.connect() as conn:
            assert conn.execute(sa.text("select 1")).scalar() == 1
            n = conn.execute(sa.text("select count(*) from nation")).scalar()
            assert n == 25, n

    check("connect (SQLAlchemy transactions, no AUTOCOMMIT)", connect)

    def table_and_view_names():
        insp = sa.inspect(engine)
        assert "nation" in insp.get_table_names(), insp.get_table_names()
        assert insp.get_view_names() == ["nation_names"], insp.get_view_names()

    check("inspect: get_table_names, get_view_names", table_and_view_names)

    def columns():
        cols = sa.inspect(engine).get_columns("nation")
        got = [(c["name"], str(c["type"]), c["nullable"]) for c in cols]
        want = [
            ("n_nationkey", "INTEGER", False),
            ("n_name", "VARCHAR(25)", False),
            ("n_regionkey", "INTEGER", True),
        ]
        assert got == want, got

    check("inspect: get_columns (names, types, nullability)", columns)

    def pk_ok(pk):
        assert pk["constrained_columns"] == ["n_nationkey"], pk

    gap("inspect: get_pk_constraint", lambda: sa.inspect(engine).get_pk_constraint("nation"), pk_ok)

    def indexes_ok(ixs):
        names = sorted((ix["name"], tuple(ix["column_names"])) for ix in ixs)
        assert ("nation_region", ("n_regionkey",)) in names, names

    gap("inspect: get_indexes", lambda: sa.inspect(engine).get_indexes("nation"), indexes_ok)

    def read_sql():
        df = pd.read_sql("select * from nation order by n_nationkey", engine)
        assert list(df.columns) == ["n_nationkey", "n_name", "n_regionkey"], list(df.columns)
        assert len(df) == 25 and df["n_name"][24] == "UNITED STATES", df.tail(1)

    check("pd.read_sql", read_sql)

    def table_ok(df):
        assert len(df) == 25 and sorted(df["n_nationkey"]) == list(range(25)), df

    gap("pd.read_sql_table", lambda: pd.read_sql_table("nation", engine), table_ok)

    def to_sql_round_trip():
        df = frame(rows)
        started = time.time()
        written = df.to_sql(
            "frame", engine, if_exists="replace", index=False, dtype={"d": sa.Numeric(14, 2)}
        )
        took = time.time() - started
        print(f"     to_sql: {rows} rows in {took:.1f} s ({rows / took:.0f} rows/s)")
        assert written in (rows, None, -1), written
        # coerce_float=False: decimals come back as Decimal, not float.
        back = pd.read_sql("select * from frame order by i", engine, coerce_float=False)
        assert list(back.columns) == list(df.columns), list(back.columns)
        assert len(back) == rows, len(back)
        for col in df.columns:
            want = [plain(v) for v in df[col].tolist()]
            got = [plain(v) for v in back[col].tolist()]
            if col == "dt":
                got = [v.date() if isinstance(v, datetime.datetime) else v for v in got]
            bad = next((k for k, (a, b) in enumerate(zip(want, got)) if a != b), None)
            assert bad is None, f"column {col} row {bad}: wrote {want[bad]!r}, read {got[bad]!r}"

    check(f"DataFrame.to_sql of {rows} rows read back equal", to_sql_round_trip)

    def to_sql_with_index():
        # pandas' default: the frame's index as a column, with an index on it.
        df = pd.DataFrame({"v": np.arange(2000) * 2})
        df.to_sql("indexed", engine, if_exists="replace")
        back = pd.read_sql('select v from indexed where "index" = 1234', engine)
        assert back["v"].tolist() == [2468], back
        with engine.connect() as conn:
            n = conn.execute(sa.text("select count(*) from pg_indexes where tablename = 'indexed'")).scalar()
            assert n == 1, n

    check("DataFrame.to_sql with its index (an index on it)", to_sql_with_index)

    def replace_ok(_):
        n = pd.read_sql("select count(*) as n from indexed", engine)["n"][0]
        assert n == 3, n

    # Replacing an existing table reflects it first (its key and indexes).
    gap(
        "DataFrame.to_sql(if_exists='replace') over an existing table",
        lambda: pd.DataFrame({"v": [1, 2, 3]}).to_sql("indexed", engine, if_exists="replace"),
        replace_ok,
    )

    def begin_nested():
        with engine.connect() as conn:
            conn.execute(sa.text("create table nested (k integer primary key, v varchar(10))"))
            conn.commit()
            conn.execute(sa.text("insert into nested values (1, 'kept')"))
            sp = conn.begin_nested()
            conn.execute(sa.text("insert into nested values (2, 'undone')"))
            sp.rollback()
            with conn.begin_nested():
                conn.execute(sa.text("insert into nested values (3, 'released')"))
            try:
                with conn.begin_nested():
                    conn.execute(sa.text("insert into nested values (1, 'duplicate')"))
                raise AssertionError("duplicate key accepted")
            except sa.exc.IntegrityError:
                pass  # rolled back to its savepoint; the transaction goes on
            conn.execute(sa.text("insert into nested values (4, 'after')"))
            conn.commit()
            rows = conn.execute(sa.text("select k, v from nested order by k")).all()
            assert [tuple(r) for r in rows] == [(1, "kept"), (3, "released"), (4, "after")], rows
            conn.commit()

    check("begin_nested rolls back only its part", begin_nested)
    engine.dispose()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--rows", type=int, default=100_000)
    a = ap.parse_args()
    checks(a.port, a.rows)
    print(f"{results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
