"""Results as polars DataFrames and polars DataFrames registered as tables."""

import datetime
import decimal

import pytest

pl = pytest.importorskip("polars")


def test_results_as_polars(tpch):
    df = tpch.sql("select l_returnflag, l_linestatus, count(*) as n, sum(l_quantity) as q, "
                  "min(l_shipdate) as first from lineitem group by 1, 2 order by 1, 2").pl()
    assert isinstance(df, pl.DataFrame)
    assert df.columns == ["l_returnflag", "l_linestatus", "n", "q", "first"]
    assert df.height == 4
    assert df["n"].sum() == 60175
    assert df.schema["first"] == pl.Date
    assert isinstance(df["q"][0], decimal.Decimal)


def test_a_polars_frame_is_a_table(con):
    frame = pl.DataFrame({
        "id": [1, 2, None],
        "name": ["a", None, "ç"],
        "day": [datetime.date(2024, 1, 2), None, datetime.date(1999, 12, 31)],
        "x": [1.5, None, -2.0],
    })
    con.register("frame", frame)
    assert con.sql("select count(*), sum(id), max(day) from frame").fetchall() == [
        (3, 3, datetime.date(2024, 1, 2))]
    back = con.sql("select * from frame order by id nulls last").pl()
    assert back.equals(frame.sort("id", nulls_last=True))
