"""psycopg 3 against kura's PostgreSQL protocol: connect, parameterised queries,
errors with SQLSTATE, (with --tpch) all 22 TPC-H queries checked against the
reference answers, and (with --savepoints) nested transactions over savepoints,
through psycopg and SQLAlchemy 2. Prints 'N passed, N failed' and exits non-zero
on a failure."""

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
                # The position field: a character index into the query.
                assert e.diag.statement_position == "15", e.diag.statement_position
                assert e.diag.message_primary == 'relation "no_such_table" does not exist', e.diag.message_primary
            conn.rollback()
            try:
                # psycopg sends `select $1::int, ...`: the position counts in that.
                conn.execute("select %s::int, 'abc'::int", [1])
                raise AssertionError("expected an error")
            except psycopg.errors.InvalidTextRepresentation as e:
                assert e.sqlstate == "22P02" and e.diag.statement_position == "17", (e.sqlstate, e.diag.statement_position)
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
    def named_cursors():
        # A server-side cursor: DECLARE (parameters bound by the server), a
        # Describe of the cursor's portal, FETCH FORWARD n, CLOSE.
        with psycopg.connect(dsn) as conn:
            with conn.cursor(name="c1") as cur:
                cur.itersize = 2
                cur.execute("select i, v from t where i >= %s order by i", (1,))
                assert [d.name for d in cur.description] == ["i", "v"], cur.description
                assert cur.fetchone() == (1, "alpha")
                assert cur.fetchmany(1) == [(2, "beta")]
                assert cur.fetchall() == [(3, "g")]
            with conn.cursor(name="c2") as cur:
                cur.itersize = 2
                cur.execute("select i from t order by i")
                assert [r[0] for r in cur] == [1, 2, 3]
            conn.commit()
        with psycopg.connect(dsn, autocommit=True) as conn:
            # Outside a transaction block only WITH HOLD cursors may be declared.
            try:
                conn.execute("declare c3 cursor for select 1")
                raise AssertionError("expected 25P01")
            except psycopg.errors.NoActiveSqlTransaction:
                pass
            with conn.cursor(name="c4", withhold=True) as cur:
                cur.execute("select count(*) from t")
                assert cur.fetchone() == (3,)

    def casts_on_parameters():
        with psycopg.connect(dsn, autocommit=True) as conn:
            # Parameters sent untyped (as text), typed by their casts.
            cur = conn.cursor()
            row = cur.execute(
                "select %s::int + 1, %s::date, cast(%s as numeric(10,2))",
                ("41", "2024-01-02", "3.14159"),
            ).fetchone()
            assert row == (42, datetime.date(2024, 1, 2), decimal.Decimal("3.14")), row
            n = cur.execute("select count(*) from t where b = %s::bigint", ("-7",)).fetchone()
            assert n == (1,), n

    def smallint_parameters_and_results():
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("create table if not exists si_py (k smallint, n integer)")
            # psycopg sends a small Python int as a text int2 parameter.
            conn.execute("insert into si_py values (%s, %s)", (-32768, 1))
            conn.execute("insert into si_py values (%s, 2)", ("32767",))
            for binary in (False, True):
                cur = conn.cursor(binary=binary)
                rows = cur.execute("select k, k::int from si_py order by n").fetchall()
                assert rows == [(-32768, -32768), (32767, 32767)], (binary, rows)
                assert [d.type_code for d in cur.description] == [21, 23], cur.description
                one = cur.execute("select k from si_py where k = %s", (32767,)).fetchone()
                assert one == (32767,), one
            try:
                conn.execute("insert into si_py values (%s::int, 3)", (40000,))
                raise AssertionError("expected an error")
            except psycopg.errors.NumericValueOutOfRange as e:
                assert "smallint out of range" in str(e), e
            try:
                conn.execute("select k + k from si_py")
                raise AssertionError("expected an error")
            except psycopg.errors.NumericValueOutOfRange as e:
                assert "smallint out of range" in str(e), e

    def timestamps_and_session_functions():
        with psycopg.connect(dsn, autocommit=True) as conn:
            ts = datetime.datetime(2024, 1, 2, 3, 4, 5, 123000)
            conn.execute("create table if not exists ts_py (t timestamp)")
            conn.execute("insert into ts_py values (%s)", (ts,))
            got = conn.execute("select t, t::date from ts_py").fetchone()
            assert got == (ts, datetime.date(2024, 1, 2)), got
            # Binary results too.
            got = conn.cursor(binary=True).execute("select t from ts_py").fetchone()
            assert got == (ts,), got
            now, db, like = conn.execute(
                "select now(), current_database() || '!', version() like 'PostgreSQL%'"
            ).fetchone()
            assert isinstance(now, datetime.datetime) and db.endswith("!") and like, (now, db)
            with psycopg.connect(dsn) as tx:
                a = tx.execute("select now()").fetchone()[0]
                b = tx.execute("select now()").fetchone()[0]
                assert a == b, "now() moved within a transaction"

    def prepare_execute():
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("prepare p1 (int) as select v from t where i = $1")
            assert conn.execute("execute p1 (2)").fetchone() == ("beta",)
            conn.execute("deallocate p1")
            try:
                conn.execute("execute p1 (2)")
                raise AssertionError("expected 26000")
            except psycopg.errors.InvalidSqlStatementName:
                pass

    check("named cursors (DECLARE/FETCH/CLOSE)", named_cursors)
    check("casts on parameters", casts_on_parameters)
    check("smallint parameters and results, text and binary", smallint_parameters_and_results)
    check("timestamps, now(), session functions", timestamps_and_session_functions)
    check("PREPARE/EXECUTE/DEALLOCATE", prepare_execute)
    check("transactions and SQLSTATE errors", transactions_and_errors)
    check("rollback discards, commit keeps, errors abort", rollback_discards_and_commit_keeps)
    check("result types (int, bigint, numeric, date, varchar, bool)", types)
    check("parameterised query", parameters)


def savepoint_checks(dsn, port):
    """Savepoints as drivers use them: psycopg's nested `conn.transaction()`
    (SAVEPOINT "_pg3_n", ROLLBACK TO / RELEASE), explicit SQL over both
    protocols, and the transaction status ('T' again after ROLLBACK TO)."""
    from psycopg.pq import TransactionStatus as TS

    class Inner(Exception):
        pass

    def setup():
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("drop table if exists sp")
            conn.execute("create table sp (i integer primary key, v varchar(10))")

    def total(conn):
        return conn.execute("select coalesce(sum(i), 0) from sp").fetchone()[0]

    def nested_blocks():
        setup()
        with psycopg.connect(dsn, autocommit=True) as conn:
            with conn.transaction():
                conn.execute("insert into sp values (1, 'outer')")
                try:
                    with conn.transaction():
                        conn.execute("insert into sp values (2, 'inner')")
                        raise Inner()
                except Inner:
                    pass
                assert conn.info.transaction_status == TS.INTRANS, conn.info.transaction_status
                with conn.transaction():
                    conn.execute("insert into sp values (4, 'kept')")
                    try:
                        with conn.transaction():
                            conn.execute("insert into sp values (8, 'deepest')")
                            raise Inner()
                    except Inner:
                        pass
                assert total(conn) == 5, total(conn)
            assert conn.info.transaction_status == TS.IDLE
            assert total(conn) == 5, total(conn)

    def error_in_inner_block_recovers():
        setup()
        with psycopg.connect(dsn) as conn:  # not autocommit: psycopg BEGINs
            conn.execute("insert into sp values (1, 'a')")
            try:
                with conn.transaction():
                    conn.execute("insert into sp values (2, 'b')")
                    conn.execute("insert into sp values (1, 'dup')")
                raise AssertionError("expected a unique violation")
            except psycopg.errors.UniqueViolation:
                pass
            assert conn.info.transaction_status == TS.INTRANS, conn.info.transaction_status
            try:
                with conn.transaction():
                    conn.execute("select 1 / 0")
            except psycopg.errors.DivisionByZero:
                pass
            conn.execute("insert into sp values (16, 'c')")
            conn.commit()
            assert total(conn) == 17, total(conn)

    def explicit_sql_both_protocols():
        setup()
        with psycopg.connect(dsn, autocommit=True) as conn:
            pg = conn.pgconn
            # Extended protocol (psycopg's execute).
            conn.execute("begin")
            conn.execute("savepoint a")
            try:
                conn.execute("select 1 / 0")
            except psycopg.errors.DivisionByZero:
                pass
            assert pg.transaction_status == TS.INERROR, pg.transaction_status
            try:
                conn.execute("rollback to savepoint nope")
                raise AssertionError("expected 3B001")
            except psycopg.errors.InvalidSavepointSpecification:
                pass
            assert pg.transaction_status == TS.INERROR, pg.transaction_status
            conn.execute("rollback to savepoint a")
            assert pg.transaction_status == TS.INTRANS, pg.transaction_status
            conn.execute("insert into sp values (1, 'x')")
            conn.execute("commit")
            # Simple protocol, with statements after ROLLBACK TO in the string.
            pg.exec_(b"begin; savepoint b; insert into sp values (2, 'y')")
            pg.exec_(b"select 1 / 0")
            assert pg.transaction_status == TS.INERROR, pg.transaction_status
            r = pg.exec_(b"rollback to b; insert into sp values (4, 'z'); release b")
            assert r.status == psycopg.pq.ExecStatus.COMMAND_OK, r.error_message
            assert pg.transaction_status == TS.INTRANS, pg.transaction_status
            pg.exec_(b"commit and chain")
            assert pg.transaction_status == TS.INTRANS, pg.transaction_status
            pg.exec_(b"rollback")
            assert pg.transaction_status == TS.IDLE, pg.transaction_status
            assert total(conn) == 5, total(conn)
            try:
                conn.execute("savepoint outside")
                raise AssertionError("expected 25P01")
            except psycopg.errors.NoActiveSqlTransaction:
                pass

    def sqlalchemy_begin_nested():
        import sqlalchemy as sa

        setup()
        engine = sa.create_engine(f"postgresql+psycopg://tester@127.0.0.1:{port}/kura")
        try:
            with engine.connect() as c:
                assert c.execute(sa.text("select 1")).scalar() == 1
                c.commit()  # SQLAlchemy 2 began a transaction for the select
                with c.begin():
                    c.execute(sa.text("insert into sp values (1, 'outer')"))
                    nested = c.begin_nested()
                    c.execute(sa.text("insert into sp values (2, 'nested')"))
                    nested.rollback()
                    with c.begin_nested():
                        c.execute(sa.text("insert into sp values (4, 'kept')"))
                    try:
                        with c.begin_nested():
                            c.execute(sa.text("insert into sp values (1, 'dup')"))
                    except sa.exc.IntegrityError:
                        pass
                    c.execute(sa.text("insert into sp values (8, 'after')"))
                got = c.execute(sa.text("select sum(i) from sp")).scalar()
                assert got == 13, got
        finally:
            engine.dispose()

    check("psycopg nested transaction blocks", nested_blocks)
    check("psycopg: an error in an inner block rolls back to its savepoint", error_in_inner_block_recovers)
    check("SAVEPOINT / ROLLBACK TO / RELEASE over both protocols", explicit_sql_both_protocols)
    check("SQLAlchemy 2 connect and begin_nested", sqlalchemy_begin_nested)


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
    ap.add_argument("--savepoints", action="store_true")
    ap.add_argument("--queries", type=pathlib.Path)
    ap.add_argument("--answers", type=pathlib.Path)
    args = ap.parse_args()
    dsn = f"host=127.0.0.1 port={args.port} user=tester dbname=kura connect_timeout=10"
    if args.tpch:
        tpch_checks(dsn, args.queries, args.answers)
    elif args.savepoints:
        savepoint_checks(dsn, args.port)
    else:
        protocol_checks(dsn)
    print(f"{results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
