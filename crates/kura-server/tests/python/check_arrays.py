"""Arrays through kura's PostgreSQL protocol with psycopg 3: Python lists as
parameters (binary and text), array results read back as lists, and (when
SQLAlchemy is installed) SQLAlchemy's inspector, which filters pg_class with
`relkind = ANY (ARRAY[...])`. Prints 'N passed, N failed'; exits non-zero on a
failure."""

import argparse
import datetime
import decimal
import sys

import psycopg

results = {"passed": 0, "failed": 0}


def check(name, fn):
    try:
        fn()
        results["passed"] += 1
        print(f"ok   {name}")
    except Exception as e:  # report every failure, keep going
        results["failed"] += 1
        print(f"FAIL {name}: {e!r}")


def checks(dsn):
    def any_with_list():
        with psycopg.connect(dsn, autocommit=True) as conn:
            n = conn.execute(
                "select count(*) from nation where n_regionkey = any(%s)", ([1, 2],)
            ).fetchone()[0]
            assert n == 10, n
            # Text lists, and the empty list.
            n = conn.execute(
                "select count(*) from nation where n_name = any(%s)", (["ALGERIA", "PERU", "x"],)
            ).fetchone()[0]
            assert n == 2, n
            n = conn.execute(
                "select count(*) from nation where n_regionkey = any(%s)", ([],)
            ).fetchone()[0]
            assert n == 0, n
            n = conn.execute(
                "select count(*) from nation where n_regionkey <> all(%s)", ([0, 1, 2, 3],)
            ).fetchone()[0]
            assert n == 5, n

    def any_with_binary_list():
        with psycopg.connect(dsn, autocommit=True) as conn:
            cur = conn.cursor(binary=True)
            n = cur.execute(
                "select count(*) from nation where n_regionkey = any(%b)", ([3, 4],)
            ).fetchone()[0]
            assert n == 10, n
            n = cur.execute(
                "select count(*) from nation where n_name = any(%b)", (["BRAZIL", "CHINA"],)
            ).fetchone()[0]
            assert n == 2, n

    def any_with_text_list():
        with psycopg.connect(dsn, autocommit=True) as conn:
            n = conn.execute(
                "select count(*) from nation where n_regionkey = any(%t)", ([0, None],)
            ).fetchone()[0]
            assert n == 5, n

    def arrays_come_back_as_lists():
        with psycopg.connect(dsn, autocommit=True) as conn:
            for binary in (False, True):
                cur = conn.cursor(binary=binary)
                row = cur.execute(
                    "select array_agg(n_nationkey order by n_nationkey), "
                    "array_agg(n_name order by n_nationkey), "
                    "ARRAY[1.5::float8, NULL], ARRAY[true, false], "
                    "ARRAY[DATE '2024-01-02'], ARRAY[10000000000], "
                    "ARRAY['a b', 'c\"d', NULL, ''], '{}'::int[], ARRAY[1.25, 2.50] "
                    "from nation where n_regionkey = 1"
                ).fetchone()
                assert row[0] == [1, 2, 3, 17, 24], (binary, row[0])
                assert row[1] == ["ARGENTINA", "BRAZIL", "CANADA", "PERU", "UNITED STATES"], row[1]
                assert row[2] == [1.5, None], row[2]
                assert row[3] == [True, False], row[3]
                assert row[4] == [datetime.date(2024, 1, 2)], row[4]
                assert row[5] == [10000000000], row[5]
                assert row[6] == ["a b", 'c"d', None, ""], row[6]
                assert row[7] == [], row[7]
                assert row[8] == [decimal.Decimal("1.25"), decimal.Decimal("2.50")], row[8]
                oids = [d.type_code for d in cur.description]
                assert oids == [1007, 1015, 1022, 1000, 1182, 1016, 1009, 1007, 1231], oids

    def unnest_a_parameter():
        with psycopg.connect(dsn, autocommit=True) as conn:
            rows = conn.execute(
                "select x from unnest(%s::int[]) as x", ([3, 1, 2],)
            ).fetchall()
            assert rows == [(3,), (1,), (2,)], rows
            rows = conn.execute("select g from generate_series(1, %s) as g", (3,)).fetchall()
            assert rows == [(1,), (2,), (3,)], rows

    def array_parameter_round_trip():
        with psycopg.connect(dsn, autocommit=True) as conn:
            v = conn.execute("select %s::text[]", (["x", "y z", None],)).fetchone()[0]
            assert v == ["x", "y z", None], v
            v = conn.execute("select cardinality(%s::bigint[])", ([1, 2, 3],)).fetchone()[0]
            assert v == 3, v

    def refused_array_column():
        with psycopg.connect(dsn, autocommit=True) as conn:
            try:
                conn.execute("create table arr (a int[])")
            except psycopg.Error as e:
                assert e.sqlstate == "0A000", e.sqlstate
                assert "array column" in str(e), str(e)
            else:
                raise AssertionError("array column accepted")

    check("= any(list), text and empty lists", any_with_list)
    check("= any(list) sent as a binary array", any_with_binary_list)
    check("= any(list) sent as a text array", any_with_text_list)
    check("array results read as lists (text and binary)", arrays_come_back_as_lists)
    check("unnest / generate_series over parameters", unnest_a_parameter)
    check("array parameters round trip", array_parameter_round_trip)
    check("array column refused with 0A000", refused_array_column)


def sqlalchemy_checks(port):
    try:
        import sqlalchemy
    except ImportError:
        print("skip SQLAlchemy (not installed)")
        return

    engine = sqlalchemy.create_engine(f"postgresql+psycopg://tester@127.0.0.1:{port}/kura")

    def table_names():
        names = sqlalchemy.inspect(engine).get_table_names()
        assert names == ["nation"], names

    def list_parameter():
        with engine.connect() as conn:
            n = conn.execute(
                sqlalchemy.text("select count(*) from nation where n_regionkey = any(:ks)"),
                {"ks": [0, 1]},
            ).scalar()
            assert n == 10, n

    def columns():
        cols = sqlalchemy.inspect(engine).get_columns("nation")
        names = [c["name"] for c in cols]
        assert names == ["n_nationkey", "n_name", "n_regionkey"], names

    check("SQLAlchemy inspect(engine).get_table_names()", table_names)
    check("SQLAlchemy text() with a list parameter", list_parameter)
    check("SQLAlchemy inspect(engine).get_columns()", columns)
    engine.dispose()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    a = ap.parse_args()
    dsn = f"host=127.0.0.1 port={a.port} user=tester dbname=kura connect_timeout=10"
    checks(dsn)
    sqlalchemy_checks(a.port)
    print(f"{results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
