"""SQLAlchemy 2 (psycopg 3) and pandas against kura's PostgreSQL protocol:
connect without AUTOCOMMIT, the inspector, pd.read_sql, DataFrame.to_sql of
--rows rows of ints, floats, decimals, text, dates, timestamps and NULLs read
back equal (with its rate), if_exists='replace' over a table it reflects,
pd.read_sql_table, begin_nested, and uuid and bytea columns. Prints 'N passed, N failed'; exits
non-zero on a failure."""

import argparse
import datetime
import decimal
import math
import sys
import time
import uuid

import numpy as np
import pandas as pd
import sqlalchemy as sa

results = {"passed": 0, "failed": 0}


def check(name, fn):
    try:
        fn()
        results["passed"] += 1
        print(f"ok   {name}")
    except Exception as e:  # report every failure, keep going
        results["failed"] += 1
        print(f"FAIL {name}: {e!r}"[:2000])


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
        assert sorted(insp.get_table_names()) == ["city", "nation"], insp.get_table_names()
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

    def primary_key():
        pk = sa.inspect(engine).get_pk_constraint("nation")
        assert pk["constrained_columns"] == ["n_nationkey"], pk
        assert pk["name"] == "nation_pkey", pk
        pk = sa.inspect(engine).get_pk_constraint("city")
        assert pk["constrained_columns"] == ["id", "nation"], pk

    check("inspect: get_pk_constraint (one and two columns)", primary_key)

    def indexes():
        ixs = sa.inspect(engine).get_indexes("nation")
        assert [(ix["name"], ix["column_names"], ix["unique"]) for ix in ixs] == [
            ("nation_region", ["n_regionkey"], False)
        ], ixs
        ixs = sa.inspect(engine).get_indexes("city")
        got = sorted((ix["name"], tuple(ix["column_names"]), ix["unique"]) for ix in ixs)
        want = [("city_name_key", ("name",), True), ("city_pop", ("pop", "name"), True)]
        assert got == want, got

    check("inspect: get_indexes (column order, uniqueness)", indexes)

    def constraints():
        insp = sa.inspect(engine)
        fks = insp.get_foreign_keys("city")
        assert [(f["constrained_columns"], f["referred_table"], f["referred_columns"]) for f in fks] == [
            (["nation"], "nation", ["n_nationkey"])
        ], fks
        uqs = insp.get_unique_constraints("city")
        assert [(u["name"], u["column_names"]) for u in uqs] == [("city_name_key", ["name"])], uqs
        cks = insp.get_check_constraints("city")
        assert [c["name"] for c in cks] == ["city_pop_check"], cks

    check("inspect: foreign keys, unique and check constraints", constraints)

    def reflect_all():
        meta = sa.MetaData()
        meta.reflect(engine)
        assert sorted(meta.tables) == ["city", "nation"], sorted(meta.tables)
        city = meta.tables["city"]
        assert [c.name for c in city.primary_key.columns] == ["id", "nation"]
        fk = next(iter(city.c.nation.foreign_keys))
        assert fk.target_fullname == "nation.n_nationkey", fk.target_fullname

    check("MetaData.reflect: tables, keys and references", reflect_all)

    def read_sql():
        df = pd.read_sql("select * from nation order by n_nationkey", engine)
        assert list(df.columns) == ["n_nationkey", "n_name", "n_regionkey"], list(df.columns)
        assert len(df) == 25 and df["n_name"][24] == "UNITED STATES", df.tail(1)

    check("pd.read_sql", read_sql)

    def read_sql_table():
        df = pd.read_sql_table("nation", engine)
        assert len(df) == 25 and sorted(df["n_nationkey"]) == list(range(25)), df
        assert list(df.columns) == ["n_nationkey", "n_name", "n_regionkey"], list(df.columns)

    check("pd.read_sql_table", read_sql_table)

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

    def replace_existing():
        # Replacing an existing table reflects it first (its key and indexes).
        pd.DataFrame({"v": [1, 2, 3]}).to_sql("indexed", engine, if_exists="replace")
        n = pd.read_sql("select count(*) as n from indexed", engine)["n"][0]
        assert n == 3, n

    check("DataFrame.to_sql(if_exists='replace') over an existing table", replace_existing)

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

    def uuid_and_binary():
        # sa.Uuid keys drawn per row by the server's gen_random_uuid(), and
        # LargeBinary: created, inserted, reflected and read back.
        md = sa.MetaData()
        items = sa.Table(
            "items", md,
            sa.Column("id", sa.Uuid, primary_key=True, server_default=sa.text("gen_random_uuid()")),
            sa.Column("blob", sa.LargeBinary), sa.Column("n", sa.Integer))
        md.create_all(engine)
        with engine.begin() as conn:
            conn.execute(items.insert(), [{"blob": b"\x00\x01\xff", "n": 1}, {"blob": None, "n": 2}])
            rows = conn.execute(sa.select(items).order_by(items.c.n)).all()
            assert [(r.blob, r.n) for r in rows] == [(b"\x00\x01\xff", 1), (None, 2)], rows
            assert isinstance(rows[0].id, uuid.UUID) and rows[0].id != rows[1].id, rows
            found = conn.execute(sa.select(items.c.n).where(items.c.id == rows[1].id)).scalar()
            assert found == 2, found
        kinds = {c["name"]: str(c["type"]) for c in sa.inspect(engine).get_columns("items")}
        assert kinds == {"id": "UUID", "blob": "BYTEA", "n": "INTEGER"}, kinds
        df = pd.DataFrame({"u": [uuid.uuid4(), uuid.uuid4()], "b": [b"ab", b"\xff"]})
        df.to_sql("frame_ub", engine, index=False, dtype={"u": sa.Uuid, "b": sa.LargeBinary})
        back = pd.read_sql("select u, b from frame_ub", engine)
        assert sorted(back["u"]) == sorted(df["u"]), back
        assert sorted(bytes(b) for b in back["b"]) == [b"ab", b"\xff"], back

    check("uuid and bytea columns (sa.Uuid, LargeBinary, to_sql)", uuid_and_binary)
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
