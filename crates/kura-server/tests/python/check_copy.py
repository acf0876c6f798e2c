"""psycopg 3's COPY against kura's PostgreSQL protocol: cursor.copy() FROM
STDIN with write_row and with raw write, TO STDOUT read back as rows and as
data, an error in the middle of the data, CopyFail from the client, COPY inside
a transaction, a round trip TO STDOUT -> FROM STDIN, the binary format both
ways, uuid and bytea values, and (with --rows N) a big load. Prints 'N passed, N failed' and exits non-zero on a failure."""

import argparse
import datetime
import decimal
import sys
import time
import uuid

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


TABLE = "(i integer not null, v varchar(40), d decimal(12,2), dt date, b boolean)"

ROWS = [
    (1, "plain", decimal.Decimal("1.50"), datetime.date(1995, 3, 15), True),
    (2, None, decimal.Decimal("-0.05"), None, False),
    (3, "", decimal.Decimal("0.00"), datetime.date(2000, 2, 29), None),
    (4, "tab\there, back\\slash", decimal.Decimal("12345678.90"), datetime.date(1970, 1, 1), True),
    (5, 'new\nline "quoted"', None, datetime.date(1999, 12, 31), False),
]


def fresh(conn, name):
    conn.execute(f"drop table if exists {name}")
    conn.execute(f"create table {name} {TABLE}")


def all_rows(conn, name):
    return conn.execute(f"select i, v, d, dt, b from {name} order by i").fetchall()


def count(conn, name):
    return conn.execute(f"select count(*) from {name}").fetchone()[0]


def checks(dsn, big_rows):
    conn = psycopg.connect(dsn, autocommit=True)

    def write_row():
        fresh(conn, "t")
        with conn.cursor() as cur:
            with cur.copy("COPY t (i, v, d, dt, b) FROM STDIN") as cp:
                for r in ROWS:
                    cp.write_row(r)
            assert cur.rowcount == len(ROWS), cur.rowcount
        got = all_rows(conn, "t")
        assert got == ROWS, got

    def raw_write_text_and_csv():
        fresh(conn, "w")
        with conn.cursor() as cur:
            data = b"10\ta\\tb\t1.25\t2001-02-03\tt\n11\t\\N\t\\N\t\\N\t\\N\n"
            with cur.copy("COPY w FROM STDIN") as cp:
                # Lines split across CopyData messages arrive whole.
                for k in range(0, len(data), 7):
                    cp.write(data[k : k + 7])
            assert cur.rowcount == 2, cur.rowcount
            csv = b'i,v\n12,"x,""y"""\n13,\n'
            with cur.copy("COPY w (i, v) FROM STDIN WITH (FORMAT csv, HEADER)") as cp:
                cp.write(csv)
            assert cur.rowcount == 2, cur.rowcount
        got = all_rows(conn, "w")
        assert got == [
            (10, "a\tb", decimal.Decimal("1.25"), datetime.date(2001, 2, 3), True),
            (11, None, None, None, None),
            (12, 'x,"y"', None, None, None),
            (13, None, None, None, None),
        ], got

    def to_stdout_rows():
        with conn.cursor() as cur:
            with cur.copy("COPY (SELECT i, v, d, dt, b FROM t ORDER BY i) TO STDOUT") as cp:
                cp.set_types(["int4", "text", "numeric", "date", "bool"])
                got = list(cp.rows())
            assert cur.rowcount == len(ROWS), cur.rowcount
        assert got == ROWS, got
        with conn.cursor() as cur:
            with cur.copy("COPY t (i, v) TO STDOUT WITH (FORMAT csv, HEADER)") as cp:
                data = b"".join(bytes(d) for d in cp)
        text = data.decode()
        assert text.startswith("i,v\n1,plain\n2,\n3,\"\"\n"), text
        assert '5,"new\nline ""quoted"""\n' in text, text

    def error_in_the_middle():
        fresh(conn, "e")
        data = "".join(f"{k}\tv{k}\t1\t2020-01-01\tt\n" for k in range(1, 1000))
        data = data.replace("\n500\tv500\t1\t", "\n500\tv500\tx1\t")
        try:
            with conn.cursor() as cur:
                with cur.copy("COPY e FROM STDIN") as cp:
                    cp.write(data)
            raise AssertionError("a bad value was accepted")
        except psycopg.errors.InvalidTextRepresentation as e:
            msg = str(e)
            assert "STDIN:500:" in msg and "column d" in msg, msg
            assert e.sqlstate == "22P02", e.sqlstate
        assert count(conn, "e") == 0, "nothing of a failed COPY is committed"
        try:
            with conn.cursor() as cur:
                with cur.copy("COPY e FROM STDIN") as cp:
                    cp.write("1\tx\t1\t2020-01-01\tt\textra\n")
            raise AssertionError("an extra field was accepted")
        except psycopg.Error as e:
            assert e.sqlstate == "22P04", (e.sqlstate, str(e))
            assert "STDIN:1:" in str(e), str(e)
        try:
            with conn.cursor() as cur:
                with cur.copy("COPY e (v) FROM STDIN") as cp:
                    cp.write("x\n")
            raise AssertionError("a NOT NULL column was left NULL")
        except psycopg.errors.NotNullViolation as e:
            assert "column i" in str(e), str(e)
        # The connection goes on.
        assert conn.execute("select 1").fetchone()[0] == 1

    def copy_fail():
        fresh(conn, "f")

        class Stop(Exception):
            pass

        try:
            with conn.cursor() as cur:
                with cur.copy("COPY f FROM STDIN") as cp:
                    for k in range(2000):
                        cp.write_row((k, "x", 1, None, None))
                    raise Stop()
        except Stop:
            pass
        assert count(conn, "f") == 0, "CopyFail loads nothing"
        assert conn.execute("select 2").fetchone()[0] == 2

    def in_a_transaction():
        fresh(conn, "x")
        with psycopg.connect(dsn) as tconn:  # not autocommit: psycopg opens BEGIN
            with tconn.cursor() as cur:
                with cur.copy("COPY x FROM STDIN") as cp:
                    cp.write_row((1, "a", 1, None, None))
                assert count(tconn, "x") == 1
            tconn.rollback()
            assert count(tconn, "x") == 0, "ROLLBACK discards the COPY"
            with tconn.cursor() as cur:
                with cur.copy("COPY x FROM STDIN") as cp:
                    cp.write_row((2, "b", 2, None, None))
            tconn.commit()
        assert count(conn, "x") == 1, "COMMIT keeps it"
        # A failed COPY aborts the transaction, as any failed statement.
        with psycopg.connect(dsn) as tconn:
            try:
                with tconn.cursor() as cur:
                    with cur.copy("COPY x FROM STDIN") as cp:
                        cp.write("zz\n")
            except psycopg.Error:
                pass
            try:
                tconn.execute("select 1")
                raise AssertionError("the transaction went on")
            except psycopg.errors.InFailedSqlTransaction:
                pass
            tconn.rollback()

    def round_trip():
        for fmt in ["", " WITH (FORMAT csv)"]:
            fresh(conn, "r")
            with conn.cursor() as cur:
                with cur.copy(f"COPY t TO STDOUT{fmt}") as cp:
                    data = b"".join(bytes(d) for d in cp)
                with cur.copy(f"COPY r FROM STDIN{fmt}") as cp:
                    cp.write(data)
            assert all_rows(conn, "r") == ROWS, (fmt, all_rows(conn, "r"))

    def binary_both_ways():
        # psycopg's fastest path: rows in PostgreSQL's binary COPY format,
        # typed by set_types, written and read back; then a raw binary round trip.
        types = ["int4", "text", "numeric", "date", "bool"]
        fresh(conn, "bin")
        with conn.cursor() as cur:
            with cur.copy("COPY bin (i, v, d, dt, b) FROM STDIN (FORMAT BINARY)") as cp:
                cp.set_types(types)
                for r in ROWS:
                    cp.write_row(r)
            assert cur.rowcount == len(ROWS), cur.rowcount
            assert all_rows(conn, "bin") == ROWS, all_rows(conn, "bin")
            with cur.copy("COPY (SELECT i, v, d, dt, b FROM bin ORDER BY i) TO STDOUT (FORMAT BINARY)") as cp:
                cp.set_types(types)
                got = list(cp.rows())
            assert got == ROWS, got
            with cur.copy("COPY bin TO STDOUT (FORMAT BINARY)") as cp:
                data = b"".join(bytes(d) for d in cp)
            assert data.startswith(b"PGCOPY\n\xff\r\n\x00"), data[:20]
            fresh(conn, "bin2")
            with cur.copy("COPY bin2 FROM STDIN (FORMAT BINARY)") as cp:
                cp.write(data)
        assert all_rows(conn, "bin2") == ROWS, all_rows(conn, "bin2")
        # Without set_types psycopg picks each value's type (int2 for a
        # small int): any integer width loads into an integer column.
        with conn.cursor() as cur:
            with cur.copy("COPY bin2 (i, v) FROM STDIN (FORMAT BINARY)") as cp:
                cp.write_row((6, "six"))
        assert conn.execute("select v from bin2 where i = 6").fetchone() == ("six",)

    def uuid_and_bytea():
        # Parameters and results in text and binary, COPY binary and text.
        conn.execute("drop table if exists ub")
        conn.execute("create table ub (id uuid primary key, b bytea)")
        u = uuid.uuid4()
        blob = bytes(range(256))
        conn.execute("insert into ub values (%s, %s)", (u, blob))
        conn.execute("insert into ub values (%s, %s)", (uuid.UUID(int=1), None))
        for binary in (False, True):
            got = conn.execute("select id, b from ub where id = %s", (u,), binary=binary).fetchone()
            assert got[0] == u and bytes(got[1]) == blob, (binary, got)
        assert conn.execute("select count(*) from ub where b = %s", (blob,)).fetchone() == (1,)
        with conn.cursor() as cur:
            with cur.copy("COPY ub FROM STDIN (FORMAT BINARY)") as cp:
                cp.set_types(["uuid", "bytea"])
                cp.write_row((uuid.UUID(int=5), b"\x00 \\ \xff"))
            with cur.copy("COPY ub TO STDOUT (FORMAT BINARY)") as cp:
                cp.set_types(["uuid", "bytea"])
                rows = {r[0]: r[1] for r in cp.rows()}
            assert rows[uuid.UUID(int=5)] == b"\x00 \\ \xff", rows
            assert rows[uuid.UUID(int=1)] is None and rows[u] == blob
            with cur.copy("COPY (SELECT id, b FROM ub WHERE id = '00000000-0000-0000-0000-000000000005') TO STDOUT") as cp:
                text = b"".join(bytes(d) for d in cp)
            assert text == b"00000000-0000-0000-0000-000000000005\t\\\\x00205c20ff\n", text
        kind = conn.execute("select pg_typeof(gen_random_uuid())::text").fetchone()
        assert kind == ("uuid",), kind

    def big():
        fresh(conn, "big")
        start = time.time()
        with conn.cursor() as cur:
            with cur.copy("COPY big FROM STDIN") as cp:
                for k in range(big_rows):
                    cp.write_row((k, f"row number {k:>12} of the big load", k % 1000, None, k % 2 == 0))
            assert cur.rowcount == big_rows, cur.rowcount
        took = time.time() - start
        n, s = conn.execute("select count(*), sum(i) from big").fetchone()
        assert (n, s) == (big_rows, big_rows * (big_rows - 1) // 2), (n, s)
        print(f"big load: {big_rows} rows in {took:.1f} s")
        start = time.time()
        with conn.cursor() as cur:
            with cur.copy("COPY big TO STDOUT") as cp:
                lines = sum(1 for _ in cp)
        print(f"big unload: {lines} rows in {time.time() - start:.1f} s")
        assert lines == big_rows, lines

    check("copy from stdin with write_row", write_row)
    check("copy from stdin with raw write, text and csv", raw_write_text_and_csv)
    check("copy to stdout as rows and as csv", to_stdout_rows)
    check("an error in the middle names the line, loads nothing", error_in_the_middle)
    check("CopyFail from the client loads nothing", copy_fail)
    check("copy inside a transaction", in_a_transaction)
    check("round trip to stdout -> from stdin", round_trip)
    check("binary format both ways (set_types, rows, raw)", binary_both_ways)
    check("uuid and bytea: parameters, results and COPY in text and binary", uuid_and_bytea)
    if big_rows:
        check(f"big load of {big_rows} rows", big)
    conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--rows", type=int, default=0)
    args = ap.parse_args()
    dsn = f"host=127.0.0.1 port={args.port} user=tester dbname=kura"
    checks(dsn, args.rows)
    print(f"{results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
