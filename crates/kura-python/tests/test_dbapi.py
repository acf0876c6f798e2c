"""PEP 249 (DB-API 2.0): module globals, connections, cursors, parameters, transactions,
exceptions mapped from SQLSTATE classes."""

import datetime
import decimal
import os
import uuid

import pytest

import kura


def test_module_globals():
    assert kura.apilevel == "2.0"
    assert kura.paramstyle == "qmark"
    assert kura.threadsafety in (0, 1, 2, 3)
    for name in ["Warning", "Error", "InterfaceError", "DatabaseError", "DataError",
                 "OperationalError", "IntegrityError", "InternalError", "ProgrammingError",
                 "NotSupportedError"]:
        assert issubclass(getattr(kura, name), Exception)
    assert issubclass(kura.DataError, kura.DatabaseError)
    assert issubclass(kura.DatabaseError, kura.Error)
    assert issubclass(kura.InterfaceError, kura.Error)


def test_cursor_fetch_and_description(tpch):
    cur = tpch.cursor()
    cur.execute("select n_nationkey, n_name from nation where n_regionkey = ? order by 1", [1])
    assert [d[0] for d in cur.description] == ["n_nationkey", "n_name"]
    assert cur.description[0][1] == "integer"
    assert cur.rowcount == 5
    first = cur.fetchone()
    assert first == (1, "ARGENTINA")
    assert cur.fetchmany(2) == [(2, "BRAZIL"), (3, "CANADA")]
    rest = cur.fetchall()
    assert [r[0] for r in rest] == [17, 24]
    assert cur.fetchone() is None
    assert cur.fetchall() == []


def test_iteration_and_arraysize(tpch):
    cur = tpch.cursor()
    cur.arraysize = 10
    cur.execute("select r_regionkey from region order by 1")
    assert len(cur.fetchmany()) == 5
    cur.execute("select r_regionkey from region order by 1")
    assert [r[0] for r in cur] == [0, 1, 2, 3, 4]


def test_rowcount_of_commands(con):
    cur = con.cursor()
    cur.execute("create table t (a int, b text)")
    assert cur.rowcount == -1
    assert cur.description is None
    cur.execute("insert into t values (1, 'x'), (2, 'y'), (3, null)")
    assert cur.rowcount == 3
    cur.execute("update t set b = 'z' where a >= ?", [2])
    assert cur.rowcount == 2
    cur.execute("delete from t where a = $1", (1,))
    assert cur.rowcount == 1
    with pytest.raises(kura.ProgrammingError):
        cur.fetchall()


def test_executemany(con):
    con.execute("create table t (id int, name varchar(10), price decimal(8,2))")
    rows = [(i, f"n{i}", decimal.Decimal(i) / 4) for i in range(10_000)]
    cur = con.executemany("insert into t values (?, ?, ?)", rows)
    assert cur.rowcount == 10_000
    assert con.execute("select count(*), sum(price), max(name) from t").fetchone() == (
        10_000, decimal.Decimal("12498750.00"), "n9999")
    # A generator works, and a wrong row stops the batch with the database's error.
    with pytest.raises(kura.DataError):
        con.executemany("insert into t values (?, ?, ?)",
                        ((i, "x" * (i + 8), 1) for i in range(5)))


def test_parameter_types_round_trip(con):
    values = [
        None, True, False, 7, -2**63, 2**70, 1.25, float("inf"), "text ' with quote",
        "unicode: 蔵 ✓", decimal.Decimal("-123.456"), datetime.date(1994, 1, 1),
        datetime.datetime(2020, 2, 29, 23, 59, 58, 123456), datetime.timedelta(days=3, seconds=7),
        uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), b"\x00\x01\xff",
    ]
    # A UUID and bytes travel as their text (as PostgreSQL's untyped literal does): cast
    # where they are not bound to a uuid or bytea column.
    cast = {uuid.UUID: "?::uuid", bytes: "?::bytea"}
    marks = [cast.get(type(v), "?") for v in values]
    got = con.execute("select " + ", ".join(marks), values).fetchone()
    assert got[0] is None
    assert got[1] is True and got[2] is False
    assert got[3] == 7 and got[4] == -2**63 and got[5] == 2**70
    assert got[6] == 1.25 and got[7] == float("inf")
    assert got[8] == values[8] and got[9] == values[9]
    assert got[10] == decimal.Decimal("-123.456")
    assert got[11] == datetime.date(1994, 1, 1)
    assert got[12] == values[12]
    assert got[13] == datetime.timedelta(days=3, seconds=7)
    assert got[14] == values[14]
    assert got[15] == b"\x00\x01\xff"


def test_string_parameter_takes_the_statement_type(con):
    con.execute("create table d (day date, n int)")
    con.execute("insert into d values (?, ?)", ["1998-12-01", "42"])
    assert con.execute("select day + 1, n + 1 from d").fetchone() == (
        datetime.date(1998, 12, 2), 43)


def test_arrays_json_and_a_question_mark_in_a_string(con):
    row = con.execute("select ?::int[] as a, '?' as q, ? as j", [[1, None, 3], {"k": [1, 2]}]).fetchone()
    assert row[0] == [1, None, 3]
    assert row[1] == "?"
    assert row[2] in ('{"k": [1, 2]}', '{"k":[1,2]}')


def test_parameter_count_and_style_errors(con):
    with pytest.raises(kura.ProgrammingError, match="2 parameter"):
        con.execute("select ?::int + ?::int", [1])
    with pytest.raises(kura.ProgrammingError, match="1 parameter"):
        con.execute("delete from nothing where a = $1", [1, 2])
    with pytest.raises(kura.ProgrammingError, match="both"):
        con.execute("select ? + $1", [1])
    with pytest.raises(kura.ProgrammingError, match="sequence"):
        con.execute("select ?", "x")
    with pytest.raises(kura.ProgrammingError, match="cannot pass"):
        con.execute("select ?", [object()])


def test_exceptions_carry_sqlstate(con):
    con.execute("create table u (id int primary key, v int not null)")
    con.execute("insert into u values (1, 1)")
    cases = [
        ("select * from missing", kura.ProgrammingError, "42P01"),
        ("selec 1", kura.ProgrammingError, "42601"),
        ("select 1/0", kura.DataError, "22012"),
        ("insert into u values (1, 2)", kura.IntegrityError, "23505"),
        ("insert into u values (2, null)", kura.IntegrityError, "23502"),
    ]
    for sql, cls, state in cases:
        with pytest.raises(cls) as e:
            con.execute(sql)
        assert e.value.sqlstate == state, sql
        assert isinstance(e.value, kura.DatabaseError)


def test_transactions(con):
    con.execute("create table t (a int)")
    con.begin()
    assert con.in_transaction
    con.execute("insert into t values (1)")
    con.rollback()
    assert not con.in_transaction
    assert con.execute("select count(*) from t").fetchone() == (0,)
    con.begin()
    con.execute("insert into t values (2)")
    con.commit()
    assert con.execute("select a from t").fetchall() == [(2,)]
    # Without BEGIN every statement commits by itself; commit/rollback do nothing then.
    con.execute("insert into t values (3)")
    con.rollback()
    assert con.execute("select count(*) from t").fetchone() == (2,)


def test_context_manager_commits_or_rolls_back(tmp_path):
    path = str(tmp_path / "cm.db")
    with kura.connect(path) as c:
        c.execute("create table t (a int)")
        c.begin()
        c.execute("insert into t values (1)")
    with pytest.raises(RuntimeError):
        with kura.connect(path) as c:
            c.begin()
            c.execute("insert into t values (2)")
            raise RuntimeError("boom")
    with kura.connect(path) as c:
        assert c.execute("select a from t").fetchall() == [(1,)]


def test_closed_connection_and_cursor(tmp_path):
    c = kura.connect(str(tmp_path / "x.db"))
    cur = c.cursor()
    cur.close()
    with pytest.raises(kura.InterfaceError):
        cur.execute("select 1")
    c.close()
    assert c.closed
    with pytest.raises(kura.InterfaceError):
        c.execute("select 1")
    with pytest.raises(kura.InterfaceError):
        c.cursor()


def test_memory_database_is_removed_on_close():
    c = kura.connect()
    c.execute("create table t as select 1 as a")
    native_path = str(c._native.path)
    assert os.path.exists(native_path)
    c.close()
    assert not os.path.exists(os.path.dirname(native_path))


def test_persistence_across_connections(tmp_path):
    path = str(tmp_path / "p.db")
    c = kura.connect(path)
    c.execute("create table t (a int, b text)")
    c.executemany("insert into t values (?, ?)", [(1, "é"), (2, None)])
    c.close()
    c = kura.connect(path)
    assert c.execute("select * from t order by a").fetchall() == [(1, "é"), (2, None)]
    c.close()


def test_open_errors(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database" * 100)
    with pytest.raises(kura.DatabaseError):
        kura.connect(str(junk))
    with pytest.raises(kura.ProgrammingError, match="buffer"):
        kura.connect(str(tmp_path / "b.db"), buffer="lots")


def test_config_settings(tmp_path):
    c = kura.connect(str(tmp_path / "s.db"), config={"memory_limit": "1GB"})
    assert c.execute("show memory_limit").fetchone()[0].lower().replace(" ", "") in ("1gb", "1024mb")
    c.close()
    with pytest.raises(kura.ProgrammingError):
        kura.connect(str(tmp_path / "t.db"), config={"a; drop table x": 1})
