"""Results as pyarrow Tables and pandas DataFrames, and Python data registered as tables:
round trips of every type, NULLs included."""

import datetime
import decimal

import pyarrow as pa
import pytest

import kura

pd = pytest.importorskip("pandas")


def test_tpch_query_as_arrow_and_pandas(tpch):
    t = tpch.sql("select l_returnflag, l_linestatus, count(*) as n, sum(l_quantity) as q "
                 "from lineitem group by 1, 2 order by 1, 2").arrow()
    assert isinstance(t, pa.Table)
    assert t.column_names == ["l_returnflag", "l_linestatus", "n", "q"]
    assert t.num_rows == 4
    assert sum(t.column("n").to_pylist()) == 60175
    df = tpch.sql("select * from lineitem").df()
    assert len(df) == 60175
    # As DuckDB's df(): DATE as datetime64, DECIMAL as float64.
    assert str(df["l_shipdate"].dtype).startswith("datetime64")
    first = tpch.sql("select min(l_shipdate) from lineitem").fetchone()[0]
    assert df["l_shipdate"].min() == pd.Timestamp(first)
    assert str(df["l_extendedprice"].dtype) == "float64"
    # Row count and a sum agree with the database's own answer.
    total = tpch.sql("select sum(l_extendedprice) from lineitem").fetchone()[0]
    assert abs(df["l_extendedprice"].sum() - float(total)) < 1e-3
    # Chunks are large (not one per internal batch of a few thousand rows).
    t = tpch.sql("select * from lineitem").arrow()
    assert len(t.column(0).chunks) == 1


def test_arrow_types(con):
    con.execute("create table t (b boolean, s smallint, i int, g bigint, f double, "
                "d decimal(12,3), day date, ts timestamp, v varchar(5), c char(3), "
                "u uuid, y bytea, iv interval, j jsonb)")
    con.execute("insert into t values (true, 1, 2, 3, 4.5, 6.789, '2000-01-01', "
                "'2000-01-01 10:00:00.5', 'héllo', 'ab', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', "
                "'\\x00ff', '1 mon 2 days 3 seconds', '{\"a\": 1}')")
    con.execute("insert into t values (" + ", ".join(["null"] * 14) + ")")
    t = con.sql("select * from t").arrow()
    types = dict(zip(t.column_names, t.schema.types))
    assert types["b"] == pa.bool_()
    assert types["s"] == pa.int16() and types["i"] == pa.int32() and types["g"] == pa.int64()
    assert types["f"] == pa.float64()
    assert types["d"] == pa.decimal128(12, 3)
    assert types["day"] == pa.date32()
    assert types["ts"] == pa.timestamp("us")
    assert types["v"] == pa.string() and types["u"] == pa.string()
    assert types["y"] == pa.binary()
    assert types["iv"] == pa.month_day_nano_interval()
    first = {k: v[0] for k, v in t.to_pydict().items()}
    assert first["d"] == decimal.Decimal("6.789")
    assert first["ts"] == datetime.datetime(2000, 1, 1, 10, 0, 0, 500000)
    assert first["v"] == "héllo"
    assert first["y"] == b"\x00\xff"
    assert first["iv"].months == 1 and first["iv"].days == 2
    assert all(v[1] is None for v in t.to_pydict().values())


def test_arrow_after_partial_fetch_gives_the_rest(tpch):
    cur = tpch.cursor()
    cur.execute("select n_nationkey from nation order by 1")
    cur.fetchmany(10)
    rest = cur.arrow()
    assert rest.column(0).to_pylist() == list(range(10, 25))


def test_relation_reads_again(tpch):
    rel = tpch.sql("select count(*) as n from region")
    assert rel.fetchall() == [(5,)]
    assert rel.fetchall() == [(5,)]
    assert rel.arrow().column("n").to_pylist() == [5]
    assert rel.columns == ["n"]
    assert "n" in repr(rel)
    assert tpch.sql("create table x (a int)") is None


def test_register_pandas_round_trip(con):
    df = pd.DataFrame({
        "id": [1, 2, 3],
        "name": ["a", None, "蔵"],
        "score": [1.5, None, -2.25],
        "flag": [True, False, None],
        "when": pd.to_datetime(["2020-01-01 00:00", "2021-06-30 12:00", None]),
    })
    con.register("people", df)
    assert con.sql("select count(*), count(name), sum(score) from people").fetchone() == (3, 2, -0.75)
    back = con.sql("select * from people order by id").df()
    assert list(back.columns) == ["id", "name", "score", "flag", "when"]
    assert back["name"].tolist()[2] == "蔵"
    assert back["when"].iloc[1] == pd.Timestamp("2021-06-30 12:00")
    # A registered name joins stored tables, and goes away when unregistered.
    con.execute("create table bonus (id int, extra int)")
    con.execute("insert into bonus values (1, 10), (3, 30)")
    assert con.sql("select sum(extra) from people join bonus using (id)").fetchone() == (40,)
    con.unregister("people")
    with pytest.raises(kura.ProgrammingError):
        con.sql("select * from people")


def test_register_arrow_and_dict(con):
    table = pa.table({"k": pa.array([1, 2, None], pa.int64()),
                      "d": pa.array([decimal.Decimal("1.10"), None, decimal.Decimal("-3.00")],
                                    pa.decimal128(10, 2)),
                      "day": pa.array([datetime.date(1999, 12, 31), None, None], pa.date32())})
    con.register("t", table)
    assert con.sql("select sum(d), min(day), count(k) from t").fetchone() == (
        decimal.Decimal("-1.90"), datetime.date(1999, 12, 31), 2)
    con.register("t", {"x": [1, 2, 3]})  # replaces the earlier one
    assert con.sql("select sum(x) from t").fetchone() == (6,)
    with pytest.raises(kura.ProgrammingError):
        con.register("bad", [1, 2, 3])


def test_register_shadows_a_table_of_the_same_name(con):
    con.execute("create table s as select 1 as a")
    con.register("s", {"a": [5, 6]})
    assert con.sql("select sum(a) from s").fetchone() == (11,)
    con.unregister("s")
    assert con.sql("select sum(a) from s").fetchone() == (1,)


def test_create_table_from_a_dataframe(con):
    df = pd.DataFrame({"a": range(1000), "b": [f"v{i}" for i in range(1000)]})
    con.register("df", df)
    con.execute("create table stored as select * from df")
    con.unregister("df")
    assert con.sql("select count(*), max(b) from stored").fetchone() == (1000, "v999")


def test_empty_result_as_arrow(con):
    t = con.sql("select 1 as a where false").arrow()
    assert t.num_rows == 0 and t.column_names == ["a"]
