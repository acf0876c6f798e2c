"""Files between kura and DuckDB: Parquet, CSV and JSON written by each and read by the other
with the same rows (every type kura and DuckDB share, NULLs, decimals, dates, timestamps,
unicode), empty files, and corrupt files refused with nothing loaded."""

import datetime
import decimal
import os
import uuid

import pytest

import kura

duckdb = pytest.importorskip("duckdb")

# Columns both systems have, as kura declares them and as DuckDB does.
COLUMNS = [
    ("b", "BOOLEAN", "BOOLEAN"),
    ("s", "SMALLINT", "SMALLINT"),
    ("i", "INTEGER", "INTEGER"),
    ("g", "BIGINT", "BIGINT"),
    ("f", "DOUBLE PRECISION", "DOUBLE"),
    ("d", "DECIMAL(10,2)", "DECIMAL(10,2)"),
    ("w", "DECIMAL(30,5)", "DECIMAL(30,5)"),
    ("dt", "DATE", "DATE"),
    ("ts", "TIMESTAMP", "TIMESTAMP"),
    ("t", "TEXT", "VARCHAR"),
    ("u", "UUID", "UUID"),
    ("bin", "BYTEA", "BLOB"),
]

ROWS = [
    (True, -1, 2, 3000000000, 1.5, decimal.Decimal("12.34"),
     decimal.Decimal("123456789012345678901.12345"), datetime.date(2024, 1, 2),
     datetime.datetime(2024, 1, 2, 3, 4, 5, 678000), 'héllo "q", ✓\ntwo lines',
     uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), b"\xde\xad\xbe\xef"),
    (None,) * 12,
    (False, 32767, -2147483648, -9223372036854775807, -0.25, decimal.Decimal("-0.01"),
     decimal.Decimal("0.00000"), datetime.date(1970, 1, 1),
     datetime.datetime(1999, 12, 31, 23, 59, 59), "", uuid.UUID(int=0), b""),
]


def kura_table(con):
    con.execute("create table a (" + ", ".join(f"{n} {k}" for n, k, _ in COLUMNS) + ")")
    con.executemany("insert into a values (" + ", ".join("?" for _ in COLUMNS) + ")", ROWS)


def duck_table():
    d = duckdb.connect()
    d.execute("create table a (" + ", ".join(f"{n} {t}" for n, _, t in COLUMNS) + ")")
    d.executemany("insert into a values (" + ", ".join("?" for _ in COLUMNS) + ")", ROWS)
    return d


def ordered(rows):
    return sorted(rows, key=lambda r: (r[2] is None, r[2]))


def test_the_same_rows_go_in(con):
    kura_table(con)
    d = duck_table()
    assert ordered(con.sql("select * from a").fetchall()) == ordered(ROWS)
    assert ordered(d.sql("select * from a").fetchall()) == ordered(ROWS)


@pytest.mark.parametrize("fmt", ["parquet", "json", "csv"])
def test_kura_writes_duckdb_reads(con, tmp_path, fmt):
    kura_table(con)
    path = str(tmp_path / f"a.{fmt}")
    option = "(format csv, header)" if fmt == "csv" else ""
    con.execute(f"copy a to '{path}' {option}")
    d = duckdb.connect()
    if fmt == "parquet":
        got = d.sql(f"select * from read_parquet('{path}')").fetchall()
        # UUIDs travel as their text.
        want = [r[:10] + (None if r[10] is None else str(r[10]), r[11]) for r in ROWS]
    elif fmt == "json":
        typed = ", ".join(f"{n}: '{t}'" for n, _, t in COLUMNS if n not in ("bin", "w"))
        got = d.sql(f"select * from read_json('{path}', columns = {{{typed}}}, "
                    "format = 'newline_delimited')").fetchall()
        want = [r[:6] + r[7:11] for r in ROWS]
    else:
        typed = ", ".join(f"'{n}': '{t if n != 'bin' else 'VARCHAR'}'" for n, _, t in COLUMNS)
        # kura writes '' as "" (PostgreSQL's CSV): DuckDB reads that as '' when told to.
        got = d.sql(f"select * exclude (bin) from read_csv('{path}', header = true, "
                    "allow_quoted_nulls = false, "
                    f"columns = {{{typed}}})").fetchall()
        want = [r[:11] for r in ROWS]
    assert ordered(got) == ordered(want)


@pytest.mark.parametrize("fmt", ["parquet", "json", "csv"])
def test_duckdb_writes_kura_reads(con, tmp_path, fmt):
    d = duck_table()
    path = str(tmp_path / f"a.{fmt}")
    option = {"parquet": "(format parquet)", "json": "(format json)",
              "csv": "(format csv, header)"}[fmt]
    d.execute(f"copy a to '{path}' {option}")
    if fmt == "parquet":
        got = con.sql(f"select * from read_parquet('{path}')").fetchall()
        # DuckDB writes UUIDs as 16 bytes (FIXED_LEN_BYTE_ARRAY), read back as UUIDs.
        want = ROWS
    elif fmt == "json":
        got = con.sql(f"select b, s, i, g, f, d::decimal(10,2), dt, ts, t, u::uuid "
                      f"from read_json('{path}')").fetchall()
        want = [r[:6] + r[7:11] for r in ROWS]
    else:
        # DuckDB writes BLOBs as escaped text (\xDE...), read here as text and left out.
        types = ", ".join(repr(k) for n, k, _ in COLUMNS if n != "bin")
        names = ", ".join(n for n, _, _ in COLUMNS if n != "bin")
        got = con.sql(f"select {names} from read_csv('{path}', types => [{types}, 'TEXT'])"
                      ).fetchall()
        want = [r[:11] for r in ROWS]
    assert ordered(got) == ordered(want)


INTERVALS = [
    (1, "1 month 2 days 3 seconds", "1 mon 2 days 00:00:03", "1 month 2 days 00:00:03"),
    (2, "30 hours", "30:00:00", "30:00:00"),
    (3, None, None, None),
    (4, "14 years 5 milliseconds", "14 years 00:00:00.005", "14 years 00:00:00.005"),
]


def test_intervals_in_parquet_both_ways(con, tmp_path):
    """Parquet's INTERVAL (months, days, milliseconds): kura writes it, DuckDB reads INTERVAL
    and writes it, kura reads INTERVAL; a negative one is refused (as DuckDB refuses it)."""
    values = ", ".join(f"({n}, {'NULL' if v is None else repr(v)}::interval)"
                       for n, v, _, _ in INTERVALS)
    path = str(tmp_path / "k.parquet")
    con.execute(f"copy (select * from (values {values}) v(n, i)) to '{path}'")
    d = duckdb.connect()
    assert d.sql(f"select distinct typeof(i) from '{path}'").fetchall() == [("INTERVAL",)]
    got = d.sql(f"select n, i::varchar from '{path}' order by n").fetchall()
    assert got == [(n, duck) for n, _, _, duck in INTERVALS]
    path = str(tmp_path / "d.parquet")
    d.execute(f"copy (select * from (values {values}) v(n, i)) to '{path}'")
    got = con.sql(f"select n, pg_typeof(i), i::text from read_parquet('{path}') order by n"
                  ).fetchall()
    assert got == [(n, "interval", k) for n, _, k, _ in INTERVALS]
    with pytest.raises(Exception, match="negative"):
        con.execute(f"copy (select interval '-1 day' as i) to '{tmp_path}/neg.parquet'")
    assert not os.path.exists(f"{tmp_path}/neg.parquet")


def test_nested_json_both_ways(con, tmp_path):
    """Nested JSON: DuckDB's structs and JSON read by kura as JSON, its lists of one type as
    arrays; kura's JSON and arrays written nested, read by DuckDB as JSON and lists."""
    d = duckdb.connect()
    path = str(tmp_path / "d.jsonl")
    d.execute("copy (select {a: 1, b: [1, 2]} as s, [1, 2, null] as l, ['x', null] as t, "
              f"'{{\"x\": [true]}}'::json as j) to '{path}'")
    got = con.sql(f"select pg_typeof(s), s, pg_typeof(l), l, pg_typeof(t), t, j->'x'->>0 "
                  f"from read_json('{path}')").fetchall()
    assert got == [("json", '{"a":1,"b":[1,2]}', "bigint[]", [1, 2, None], "text[]",
                    ["x", None], "true")]
    path = str(tmp_path / "k.jsonl")
    con.execute("copy (select '{\"a\": {\"b\": [1, 2]}}'::json as j, "
                f"'{{1,NULL,3}}'::int[] as l) to '{path}'")
    got = d.sql(f"select typeof(j), j.a.b[1]::int, typeof(l), l from '{path}'").fetchall()
    assert got == [("STRUCT(a STRUCT(b BIGINT[]))", 1, "BIGINT[]", [1, None, 3])]


def test_empty_files_both_ways(con, tmp_path):
    d = duckdb.connect()
    d.execute("create table e (i integer, t varchar)")
    d.execute(f"copy e to '{tmp_path}/e.parquet' (format parquet)")
    d.execute(f"copy e to '{tmp_path}/e.csv' (format csv, header)")
    assert con.sql(f"select count(*) from read_parquet('{tmp_path}/e.parquet')").fetchall() == [(0,)]
    assert con.sql(f"select * from read_csv('{tmp_path}/e.csv')").fetchall() == []
    con.execute("create table e (i integer, t text)")
    con.execute(f"copy e to '{tmp_path}/k.parquet'")
    con.execute(f"copy e to '{tmp_path}/k.csv' (format csv, header)")
    con.execute(f"copy e to '{tmp_path}/k.json'")
    assert d.sql(f"select count(*) from '{tmp_path}/k.parquet'").fetchall() == [(0,)]
    assert d.sql(f"select count(*) from read_csv('{tmp_path}/k.csv', header = true)"
                 ).fetchall() == [(0,)]
    assert os.path.getsize(f"{tmp_path}/k.json") == 0


def test_a_corrupt_parquet_file_loads_nothing(con, tmp_path):
    d = duckdb.connect()
    path = str(tmp_path / "big.parquet")
    d.execute(f"copy (select i, 'row ' || i as t from range(300000) r(i)) to '{path}' "
              "(format parquet, row_group_size 100000)")
    con.execute("create table keep (i bigint, t text)")
    con.execute("insert into keep values (1, 'one')")
    size = os.path.getsize(path)
    # Bytes of the middle of the file overwritten: the footer reads, a column chunk does not.
    with open(path, "r+b") as f:
        f.seek(size // 2)
        f.write(b"\xff" * 4096)
    with pytest.raises(kura.Error) as e:
        con.execute(f"insert into keep select * from read_parquet('{path}')")
    assert "big.parquet" in str(e.value)
    with pytest.raises(kura.Error):
        con.execute(f"create table t as select * from read_parquet('{path}')")
    assert con.sql("select * from keep").fetchall() == [(1, "one")]
    assert con.sql("select count(*) from pg_tables where tablename = 't'").fetchall() == [(0,)]
    # Cut short: not a Parquet file at all.
    with open(path, "r+b") as f:
        f.truncate(size // 3)
    with pytest.raises(kura.Error) as e:
        con.execute(f"create table t as select * from read_parquet('{path}')")
    assert "big.parquet" in str(e.value)


def test_a_bad_csv_line_far_into_the_file_loads_nothing(con, tmp_path):
    path = tmp_path / "bad.csv"
    with open(path, "w") as f:
        f.write("i,t\n")
        for i in range(200000):
            f.write(f"{i},row {i}\n" if i != 150000 else "x150000,oops\n")
    con.execute("create table keep (i bigint, t text)")
    with pytest.raises(kura.Error) as e:
        con.execute(f"insert into keep select * from read_csv('{path}')")
    # Named by file, line and column.
    assert "bad.csv:150002:1" in str(e.value), str(e.value)
    assert con.sql("select count(*) from keep").fetchall() == [(0,)]


# A schema both systems hold: keys, a check, a foreign key, defaults from a sequence, a view
# and an index.
SCHEMA = [
    "create sequence ids start 5",
    "create table owner (id integer primary key, name varchar not null default 'anon', "
    "score decimal(10,2) check (score >= 0), k bigint default nextval('ids'))",
    "create table item (owner_id integer references owner (id), note varchar unique)",
    "create view rich as select id, name from owner where score > 1",
    "create index item_owner on item (owner_id)",
]


def schema_rows(run):
    run("insert into owner (id, name, score) values (1, 'héllo', 1.5), (2, '', null)")
    run("insert into item values (1, 'n1'), (2, ''), (null, null)")


def dump(sql):
    """Every table and view of a database, as rows to compare."""
    return [sorted(sql(f"select * from {t}"), key=repr) for t in ("a", "owner", "item", "rich")]


@pytest.mark.parametrize("fmt", ["", "(format parquet)", "(format csv)"])
def test_kura_exports_duckdb_imports(con, tmp_path, fmt):
    kura_table(con)
    for s in SCHEMA:
        con.execute(s)
    schema_rows(con.execute)
    if "csv" in fmt:
        # BYTEA goes to CSV in PostgreSQL's hex form, which DuckDB does not read as the
        # same bytes (Parquet carries it as binary).
        con.execute("create table a2 as select b, s, i, g, f, d, w, dt, ts, t, u from a")
        con.execute("drop table a")
        con.execute("create table a as select * from a2")
        con.execute("drop table a2")
    out = str(tmp_path / "exported")
    con.execute(f"export database '{out}' {fmt}")
    d = duckdb.connect()
    d.execute(f"import database '{out}'")
    got = dump(lambda q: d.sql(q).fetchall())
    want = dump(lambda q: con.sql(q).fetchall())
    if "csv" not in fmt:
        # UUIDs travel through Parquet as their text.
        got[0] = [r[:10] + (None if r[10] is None else uuid.UUID(str(r[10])),) + r[11:]
                  for r in got[0]]
    assert got == want
    # The sequence resumes where it stood (two rows drew 5 and 6); keys hold.
    assert d.sql("select nextval('ids')").fetchall() == [(7,)]
    with pytest.raises(duckdb.ConstraintException):
        d.execute("insert into owner (id) values (1)")


@pytest.mark.parametrize("fmt", ["", "(format parquet)"])
def test_duckdb_exports_kura_imports(con, tmp_path, fmt):
    d = duck_table()
    for s in SCHEMA:
        d.execute(s)
    schema_rows(d.execute)
    out = str(tmp_path / "exported")
    if "parquet" not in fmt:
        # DuckDB's CSV holds BLOBs as escaped bytes (\xDE\xAD), which kura's BYTEA input
        # refuses (PostgreSQL's would too): an error naming the column, nothing imported.
        d.execute(f"export database '{out}' {fmt}")
        with pytest.raises(kura.DataError, match="column bin"):
            con.execute(f"import database '{out}'")
        assert con.sql("select count(*) from information_schema.tables "
                       "where table_schema = 'public'").fetchall() == [(0,)]
        d.execute("alter table a drop column bin")
        out = str(tmp_path / "exported2")
    d.execute(f"export database '{out}' {fmt}")
    # The directory moves: the files are found where the export now is.
    moved = str(tmp_path / "moved")
    os.rename(out, moved)
    con.execute(f"import database '{moved}'")
    got = dump(lambda q: con.sql(q).fetchall())
    want = dump(lambda q: d.sql(q).fetchall())
    assert got == want
    assert con.sql("select nextval('ids')").fetchall() == [(7,)]
    with pytest.raises(kura.IntegrityError):
        con.execute("insert into item values (99, 'x')")


def test_an_import_that_fails_leaves_nothing(con, tmp_path):
    d = duck_table()
    d.execute("create table later (x integer)")
    out = str(tmp_path / "exported")
    d.execute(f"export database '{out}' (format parquet)")
    with open(os.path.join(out, "later.parquet"), "wb") as f:
        f.write(b"PAR1 not a parquet file PAR1")
    with pytest.raises(kura.Error, match="later.parquet"):
        con.execute(f"import database '{out}'")
    assert con.sql("select count(*) from information_schema.tables "
                   "where table_schema = 'public'").fetchall() == [(0,)]
