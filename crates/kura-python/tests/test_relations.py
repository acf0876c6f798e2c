"""Lazy relations (`con.sql`, `con.table` and the methods composing them), each against the
same query in plain SQL, and results streamed into Arrow while the query runs."""

import pyarrow as pa
import pytest

import kura


@pytest.fixture
def people(con):
    con.execute("create table people (id int, name varchar, city varchar, age int)")
    con.execute("insert into people values (1, 'ann', 'oslo', 31), (2, 'bob', 'rome', 45), "
                "(3, 'cy', 'oslo', 27), (4, 'dee', null, 38), (5, 'eve', 'rome', 31)")
    con.execute("create table cities (city varchar, country varchar)")
    con.execute("insert into cities values ('oslo', 'no'), ('rome', 'it'), ('lima', 'pe')")
    return con


def same(rel, con, sql):
    """The relation's rows are the plain query's, in any order."""
    assert sorted(rel.fetchall(), key=repr) == sorted(con.sql(sql).fetchall(), key=repr)


def test_nothing_runs_until_read(people):
    # A value error at run time: making the relation, its columns and types do not run it.
    rel = people.sql("select cast(name as int) as n from people")
    assert rel.columns == ["n"] and rel.types == ["integer"]
    for read in (rel.fetchall, rel.arrow, rel.df, rel.fetchone, lambda: rel.to_arrow_reader().read_all()):
        with pytest.raises((kura.DataError, pa.ArrowInvalid)):
            read()
    with pytest.raises(kura.DataError) as e:
        rel.fetchall()
    assert e.value.sqlstate == "22P02"


def test_reads_see_the_tables_as_they_are_then(people):
    rel = people.sql("select count(*) from people")
    people.execute("insert into people values (6, 'fay', 'lima', 50)")
    assert rel.fetchall() == [(6,)]
    # Every read runs the query again (DuckDB's relations do too).
    people.execute("delete from people where id > 4")
    assert rel.fetchall() == [(4,)]
    # A table dropped and made again after sql() is the one read.
    tab = people.table("cities")
    people.execute("drop table cities")
    people.execute("create table cities as select 'x' as city, 'y' as country")
    assert tab.fetchall() == [("x", "y")]


def test_unknown_names_raise_when_the_relation_is_made(people):
    # As DuckDB binds a relation when it is made: its names are checked then, not its rows.
    with pytest.raises(kura.ProgrammingError):
        people.sql("select * from nowhere")
    with pytest.raises(kura.ProgrammingError):
        people.table("nowhere")
    with pytest.raises(kura.ProgrammingError):
        people.table("people").filter("height > 2")
    with pytest.raises(kura.ProgrammingError):
        people.sql("selec 1")


def test_each_method_as_plain_sql(people):
    t = people.table("people")
    assert t.sql_query() == 'SELECT * FROM "people"'
    cases = [
        (t.filter("age > 30"), "select * from people where age > 30"),
        (t.project("name", "age + 1 as next"), "select name, age + 1 as next from people"),
        (t.select("id"), "select id from people"),
        (t.aggregate("city, count(*) as n, avg(age) as a", "city"),
         "select city, count(*) as n, avg(age) as a from people group by city"),
        (t.aggregate(["min(age)", "max(age)"]), "select min(age), max(age) from people"),
        (t.project("city").distinct(), "select distinct city from people"),
        (t.project("age", groups="age"), "select age from people group by age"),
    ]
    for rel, sql in cases:
        same(rel, people, sql)
    assert t.order("age desc, id").fetchall() == people.sql(
        "select * from people order by age desc, id").fetchall()
    assert t.sort("age", "id").project("id").fetchall() == [(3,), (1,), (5,), (4,), (2,)]
    assert t.order("id").limit(2, offset=1).fetchall() == people.sql(
        "select * from people order by id limit 2 offset 1").fetchall()
    assert t.filter("age > 30").sql_query() == 'SELECT * FROM "people" WHERE (age > 30)'


def test_chaining(people):
    rel = (people.table("people")
           .filter("city is not null")
           .project("id", "name", "age * 2 as twice")
           .filter("twice > 60")
           .order("twice desc, id")
           .limit(2))
    assert rel.fetchall() == people.sql(
        "select * from (select id, name, age * 2 as twice from people where city is not null) s "
        "where twice > 60 order by twice desc, id limit 2").fetchall()
    assert rel.columns == ["id", "name", "twice"]
    # A step that SQL's clause order would change (a filter after a limit) reads a subquery.
    later = people.table("people").order("id").limit(3).filter("age > 30")
    assert later.fetchall() == [(1, "ann", "oslo", 31), (2, "bob", "rome", 45)]
    # Relations are values: deriving one leaves the other as it was.
    base = people.table("people")
    base.filter("id = 1")
    assert len(base) == 5


def test_joins(people):
    p, c = people.table("people"), people.table("cities")
    same(p.join(c, "city"), people,
         "select * from people join cities using (city)")
    same(p.set_alias("a").join(c.set_alias("b"), "a.city = b.city", how="left")
         .project("a.id", "b.country"), people,
         "select a.id, b.country from people a left join cities b on a.city = b.city")
    same(p.join(c, "people.city = cities.city", how="right").project("name", "country"), people,
         "select name, country from people right join cities on people.city = cities.city")
    same(p.join(c, "city", how="semi"), people,
         "select * from people where city in (select city from cities)")
    same(p.join(c, "city", how="anti"), people,
         "select * from people where not exists "
         "(select 1 from cities where cities.city = people.city)")
    assert len(p.cross(c)) == 15
    # A join of a join, and a filter over both sides by their aliases.
    other = people.sql("select 'no' as country, 'norway' as label")
    chain = p.join(c, "city").join(other, "country").filter("people.age < 35")
    assert sorted(chain.project("name", "label").fetchall()) == [("ann", "norway"),
                                                                 ("cy", "norway")]
    with pytest.raises(kura.ProgrammingError, match="same alias"):
        p.join(p, "id")
    with pytest.raises(kura.ProgrammingError):
        p.join(c, how="sideways")


def test_set_operations(people):
    t = people.table("people").project("id")
    assert sorted(t.filter("id < 3").union(t.filter("id < 2")).fetchall()) == [(1,), (1,), (2,)]
    assert t.except_(t.filter("id > 1")).fetchall() == [(1,)]
    assert t.intersect(t.filter("id = 4")).fetchall() == [(4,)]


def test_parameters(people):
    rel = people.sql("select * from people where age > ? and city = ?", [30, "rome"])
    assert sorted(rel.fetchall()) == [(2, "bob", "rome", 45), (5, "eve", "rome", 31)]
    assert rel.project("name").order("name").fetchall() == [("bob",), ("eve",)]
    # Each side's parameters keep their values when two relations with parameters are joined.
    lower = people.sql("select ?::int as id, ? as tag", [5, "five"])
    assert rel.join(lower, "id").project("name", "tag").fetchall() == [("eve", "five")]
    with pytest.raises(kura.ProgrammingError):
        people.sql("select ? + ?", [1])


def test_columns_types_len_and_shape(people):
    rel = people.table("people").project("id", "name", "age::decimal(5,1) as a")
    assert rel.columns == ["id", "name", "a"]
    assert rel.types == ["integer", "varchar", "decimal(5,1)"] == rel.dtypes
    assert [d[0] for d in rel.description] == rel.columns
    assert len(rel) == 5 and rel.shape == (5, 3)
    assert rel.alias == "people"
    assert rel.set_alias("q").alias == "q"


def test_repr_and_show(people, capsys):
    text = repr(people.table("people").order("id"))
    assert "name" in text and "varchar" in text and "ann" in text and "NULL" in text
    many = people.sql("select * from generate_series(1, 50) g(x)")
    assert "(50 rows, 20 shown)" in repr(many)
    many.show()
    assert "(50 rows, 20 shown)" in capsys.readouterr().out


def test_fetchone_and_fetchmany_continue_one_result(people):
    rel = people.table("people").order("id").project("id")
    assert rel.fetchone() == (1,)
    assert rel.fetchmany(2) == [(2,), (3,)]
    assert rel.fetchall() == [(4,), (5,)]  # the rest of the same result
    assert rel.fetchall() == [(1,), (2,), (3,), (4,), (5,)]  # a fresh run
    assert [r for r in rel] == [(1,), (2,), (3,), (4,), (5,)]


def test_statements_that_are_not_queries(people):
    assert people.sql("create table more (x int)") is None
    assert people.sql("insert into more values (1)") is None
    # Rows of a statement that is not a query are held: reading them again does not run it.
    returned = people.sql("insert into more values (2) returning x")
    assert returned.fetchall() == [(2,)] and returned.fetchall() == [(2,)]
    assert returned.arrow().column("x").to_pylist() == [2]
    assert people.sql("select count(*) from more").fetchall() == [(2,)]
    # In a text of several statements, those before the last run now; a last query is lazy.
    rel = people.sql("insert into more values (3); select count(*) from more")
    people.execute("insert into more values (4)")
    assert rel.fetchall() == [(4,)]


def test_create_and_insert_into(people):
    rel = people.table("people").filter("city = 'oslo'").project("id", "name")
    rel.create("oslo")
    assert sorted(people.sql("select * from oslo").fetchall()) == [(1, "ann"), (3, "cy")]
    rel.insert_into("oslo")
    assert len(people.table("oslo")) == 4


def test_streamed_arrow_equals_fetchall(tpch):
    q = "select l_orderkey, l_linenumber, l_shipdate, l_extendedprice, l_comment from lineitem"
    rel = tpch.sql(q).filter("l_shipdate <= date '1998-09-02'")
    rows = rel.fetchall()
    assert len(rows) > 50_000
    # Many chunks: kura's batches merged to the size asked for while the query runs.
    table = rel.arrow(batch_size=5000)
    assert len(table.column(0).chunks) >= 10
    assert table.num_rows == len(rows)
    assert sorted(zip(*table.to_pydict().values())) == sorted(rows)
    # The default is a few large chunks (Arrow's consumers pay per chunk).
    assert len(rel.arrow().column(0).chunks) == 1
    reader = rel.to_arrow_reader(8192)
    assert isinstance(reader, pa.RecordBatchReader)
    batches = list(reader)
    assert len(batches) > 5 and sum(b.num_rows for b in batches) == len(rows)
    assert pa.Table.from_batches(batches).equals(table.combine_chunks()) or sorted(
        zip(*pa.Table.from_batches(batches).to_pydict().values())) == sorted(rows)
    assert len(rel.df()) == len(rows)
    # Any Arrow consumer reads a relation through the C stream interface.
    assert pa.table(rel.limit(10)).num_rows == 10


def test_a_reader_holds_the_connection_until_another_statement(tpch):
    reader = tpch.sql("select * from lineitem").to_arrow_reader(1000)
    first = reader.read_next_batch()
    assert first.num_rows > 0
    # A later statement ends the reader (as in DuckDB) instead of waiting for it.
    assert tpch.sql("select count(*) from region").fetchall() == [(5,)]
    with pytest.raises(pa.ArrowException, match="later statement"):
        while True:
            reader.read_next_batch()
    # A reader let go of before its end frees the connection too.
    reader = tpch.sql("select * from lineitem").to_arrow_reader(1000)
    reader.read_next_batch()
    del reader
    assert tpch.sql("select count(*) from nation").fetchall() == [(25,)]
