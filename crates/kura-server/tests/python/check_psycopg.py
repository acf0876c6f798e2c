"""psycopg 3 against kura's PostgreSQL protocol: connect, parameterised queries,
errors with SQLSTATE, and (with --tpch) all 22 TPC-H queries checked against the
reference answers. Prints 'N passed, N failed' and exits non-zero on a failure."""

import argparse
import datetime
import decimal
import pathlib
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


def same(expected, actual):
    # The answer files write SQL NULL as `NULL`.
    e, a = expected.strip(), ("NULL" if actual is None else str(actual)).strip()
    try:
        x, y = float(e), float(a)
        return abs(x - y) <= 0.01 or abs(x - y) <= 1e-9 * max(abs(x), abs(y))
    except ValueError:
        return e == a


def compare(answer_file, rows):
    lines = [l for l in answer_file.read_text().splitlines() if l]
    expected = [l.split("|") for l in lines[1:]]
    assert len(expected) == len(rows), f"expected {len(expected)} rows, got {len(rows)}"
    for r, (e, a) in enumerate(zip(expected, rows)):
        assert len(e) == len(a), f"row {r}: expected {len(e)} columns, got {len(a)}"
        for c, (ev, av) in enumerate(zip(e, a)):
            if isinstance(av, datetime.date):
                av = av.isoformat()
            assert same(ev, av), f"row {r} column {c}: expected {ev!r}, got {av!r}"


def statements(sql):
    """Splits a query file into statements (the files hold no ';' in literals)."""
    body = "\n".join(l for l in sql.splitlines() if not l.strip().startswith("--"))
    return [s.strip() for s in body.split(";") if s.strip()]


def protocol_checks(dsn):
    def connects():
        with psycopg.connect(dsn, autocommit=True) as conn:
            v = conn.execute("select version()").fetchone()[0]
            assert v.startswith("PostgreSQL") and "kura" in v, v
            assert conn.info.server_version >= 160000, conn.info.server_version

    def transactions_and_errors():
        # Default psycopg: statements run inside BEGIN ... COMMIT.
        with psycopg.connect(dsn) as conn:
            assert conn.execute("select count(*) from t").fetchone()[0] == 3
            conn.commit()
            try:
                conn.execute("select * from no_such_table")
                raise AssertionError("expected an error")
            except psycopg.errors.UndefinedTable as e:
                assert e.sqlstate == "42P01"
            conn.rollback()
            assert conn.execute("select count(*) from t").fetchone()[0] == 3

    def rollback_discards_and_commit_keeps():
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("create table if not exists tx_py (x integer)")
        with psycopg.connect(dsn) as conn, psycopg.connect(dsn, autocommit=True) as other:
            count = lambda c: c.execute("select count(*) from tx_py").fetchone()[0]
            conn.execute("insert into tx_py values (1), (2)")
            assert count(conn) == 2
            assert count(other) == 0, "uncommitted rows are visible to another session"
            conn.rollback()
            assert count(conn) == 0, "rollback kept the rows"
            conn.execute("insert into tx_py values (3)")
            conn.commit()
            assert count(other) == 1
            # An error aborts the transaction until rollback (25P02), as in PostgreSQL.
            conn.execute("insert into tx_py values (4)")
            try:
                conn.execute("select 1 / 0")
                raise AssertionError("expected an error")
            except psycopg.errors.DivisionByZero:
                pass
            try:
                conn.execute("select 1")
                raise AssertionError("expected 25P02")
            except psycopg.errors.InFailedSqlTransaction:
                pass
            conn.rollback()
            assert count(conn) == 1
            # A transaction block left by an exception rolls back too.
            try:
                with other.transaction():
                    other.execute("insert into tx_py values (5)")
                    assert count(other) == 2
                    raise KeyError("abandon")
            except KeyError:
                pass
            assert count(other) == 1

    def types():
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute("select * from t limit 1").fetchone()
            assert row[0] == 1 and row[1] == 10000000000, row
            assert row[2] == decimal.Decimal("12.34"), row
            assert row[3] == datetime.date(1995, 3, 15), row
            assert row[4] == "alpha" and row[7] is True, row

    def parameters():
        with psycopg.connect(dsn, autocommit=True) as conn:
            rows = conn.execute("select i from t where i <= %s order by i", (2,)).fetchall()
            assert rows == [(1,), (2,)], rows
            rows = conn.execute(
                "select v from t where dt >= %s and d < %s order by v",
                (datetime.date(1995, 1, 1), decimal.Decimal("5")),
            ).fetchall()
            assert rows == [("beta",)], rows

    def type_info():
        from psycopg.types import TypeInfo

        with psycopg.connect(dsn, autocommit=True) as conn:
            info = TypeInfo.fetch(conn, "int4")
            assert info is not None, "int4 not found"
            assert (info.name, info.oid, info.array_oid) == ("int4", 23, 1007), info
            info = TypeInfo.fetch(conn, "numeric")
            assert (info.name, info.oid) == ("numeric", 1700), info
            assert TypeInfo.fetch(conn, "no_such_type") is None

    def catalog_queries():
        with psycopg.connect(dsn, autocommit=True) as conn:
            rows = conn.execute(
                "select column_name, data_type from information_schema.columns"
                " where table_name = %s order by ordinal_position limit 3",
                ("t",),
            ).fetchall()
            assert rows == [("i", "integer"), ("b", "bigint"), ("d", "numeric")], rows
            rows = conn.execute(
                "select tablename from pg_catalog.pg_tables where schemaname = 'public'"
            ).fetchall()
            assert rows == [("t",)], rows

    check("connect, version()", connects)
    check("TypeInfo.fetch (pg_type, ::regtype)", type_info)
    check("information_schema.columns, pg_tables", catalog_queries)
    check("transactions and SQLSTATE errors", transactions_and_errors)
    check("rollback discards, commit keeps, errors abort", rollback_discards_and_commit_keeps)
    check("result types (int, bigint, numeric, date, varchar, bool)", types)
    check("parameterised query", parameters)


def tpch_checks(dsn, queries, answers):
    with psycopg.connect(dsn, autocommit=True) as conn:
        def q6_with_parameters():
            rows = conn.execute(
                "select sum(l_extendedprice * l_discount) as revenue from lineitem "
                "where l_shipdate >= %s and l_shipdate < %s "
                "and l_discount between %s and %s and l_quantity < %s",
                (datetime.date(1994, 1, 1), datetime.date(1995, 1, 1),
                 decimal.Decimal("0.05"), decimal.Decimal("0.07"), 24),
            ).fetchall()
            compare(answers / "q06.csv", rows)

        check("Q6 with parameters", q6_with_parameters)
        for n in range(1, 23):
            qid = f"q{n:02d}"

            def run(qid=qid):
                rows = None
                for stmt in statements((queries / f"{qid}.sql").read_text()):
                    cur = conn.execute(stmt)
                    if cur.description is not None:
                        rows = cur.fetchall()
                compare(answers / f"{qid}.csv", rows)

            check(f"TPC-H {qid}", run)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--tpch", action="store_true")
    ap.add_argument("--queries", type=pathlib.Path)
    ap.add_argument("--answers", type=pathlib.Path)
    args = ap.parse_args()
    dsn = f"host=127.0.0.1 port={args.port} user=tester dbname=kura connect_timeout=10"
    if args.tpch:
        tpch_checks(dsn, args.queries, args.answers)
    else:
        protocol_checks(dsn)
    print(f"{results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
