"""Query loading and the SQLite translation: the rewritten texts must run in SQLite and
give the answers worked out by hand on tiny tables."""

import datetime
import os
import sqlite3
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kurabench import paths, queries, schema  # noqa: E402


class ResolveTest(unittest.TestCase):
    def test_spellings(self):
        self.assertEqual(queries.resolve("1, q06,Q22,a,D"), ["Q1", "Q6", "Q22", "A", "D"])
        self.assertEqual(len(queries.resolve("all")), 26)
        self.assertEqual(queries.resolve("selective"), ["A", "B", "C", "D"])
        self.assertEqual(queries.resolve("variants,VC"), ["vA", "vC", "vD"])
        with self.assertRaises(ValueError):
            queries.resolve("q23")
        with self.assertRaises(ValueError):
            queries.resolve("vb")


class VariantTest(unittest.TestCase):
    def test_parameters_follow_the_scale_factor_as_kuras_do(self):
        # The same figures as kura's own test (tpch::run): the paper's texts at SF 100.
        self.assertEqual(queries.variant_parameter("vA", 100), "8000")
        self.assertEqual(queries.variant_parameter("vC", 100), "Customer#00001")
        self.assertEqual(queries.variant_parameter("vD", 100), "Customer#000001")
        self.assertEqual(queries.variant_parameter("vA", 1), "80")
        self.assertEqual(queries.variant_parameter("vC", 1), "Customer#0000001")
        self.assertEqual(queries.variant_parameter("vD", 10), "Customer#0000001")
        self.assertEqual(queries.variant_parameter("vD", 0.01), "Customer#000000001")

    def test_loaded_text_carries_the_parameter(self):
        q = queries.load("vC", sf=1)
        self.assertIn("like 'Customer#0000001%'", q.statements[0])
        self.assertTrue(queries.Query("vC", ()).is_selective)
        with self.assertRaises(ValueError):
            queries.load("vC")


class LoadTest(unittest.TestCase):
    def test_every_query_has_a_select(self):
        for qid in queries.ALL:
            q = queries.load(qid)
            self.assertTrue(any(queries.is_select(s) for s in q.statements), qid)

    def test_q15_has_three_statements_and_a_view(self):
        q = queries.load("Q15")
        self.assertEqual(len(q.statements), 3)
        self.assertEqual(queries.created_views(q), ["revenue0"])


class IntervalTest(unittest.TestCase):
    def test_add_interval(self):
        d = datetime.date
        self.assertEqual(queries.add_interval(d(1998, 12, 1), -90, "day"), d(1998, 9, 2))
        self.assertEqual(queries.add_interval(d(1993, 11, 1), 3, "month"), d(1994, 2, 1))
        self.assertEqual(queries.add_interval(d(1995, 1, 31), 1, "month"), d(1995, 2, 28))
        self.assertEqual(queries.add_interval(d(1994, 1, 1), 1, "year"), d(1995, 1, 1))


class SqliteTranslationTest(unittest.TestCase):
    def translated(self, qid):
        q, notes = queries.to_sqlite(queries.load(qid))
        return q, notes

    def test_q1_date_arithmetic_becomes_a_literal(self):
        q, notes = self.translated("Q1")
        self.assertIn("l_shipdate <= '1998-09-02'", q.statements[0])
        self.assertNotIn("interval", q.statements[0].lower())
        self.assertTrue(notes)

    def test_q6_decimal_constants_are_folded_exactly(self):
        q, _ = self.translated("Q6")
        self.assertIn("between 0.05 and 0.07", q.statements[0])

    def test_untouched_query_has_no_notes(self):
        q, notes = self.translated("Q2")
        self.assertEqual(notes, [])
        self.assertEqual(q.statements, queries.load("Q2").statements)

    def test_every_translation_parses_in_sqlite(self):
        con = sqlite3.connect(":memory:")
        for table, columns in schema.read_schema().items():
            con.execute(schema.create_table_sql(table, columns))
        for qid in queries.ALL:
            q, _ = self.translated(qid)
            for stmt in q.statements:
                con.execute("EXPLAIN " + stmt if not stmt.lower().startswith(("create", "drop")) else stmt)

    def test_q13_runs_with_the_expected_counts(self):
        con = sqlite3.connect(":memory:")
        con.execute("create table customer (c_custkey integer)")
        con.execute("create table orders (o_orderkey integer, o_custkey integer, o_comment text)")
        con.executemany("insert into customer values (?)", [(1,), (2,), (3,)])
        # customer 1: two orders; customer 2: one plain order and one 'special requests' one
        # (not counted); customer 3: none.
        con.executemany(
            "insert into orders values (?, ?, ?)",
            [(10, 1, "x"), (11, 1, "y"), (12, 2, "z"), (13, 2, "a special deal requests b")],
        )
        q, notes = self.translated("Q13")
        self.assertIn("derived-table column list moved into its select list", notes)
        rows = con.execute(q.statements[0]).fetchall()
        # c_count -> custdist, ordered by custdist desc, c_count desc.
        self.assertEqual(rows, [(2, 1), (1, 1), (0, 1)])

    def test_q22_substring(self):
        q, _ = self.translated("Q22")
        self.assertIn("substr(c_phone, 1, 2)", q.statements[0])


class SchemaTest(unittest.TestCase):
    def test_schema_and_indexes(self):
        tables = schema.read_schema()
        self.assertEqual(set(tables), set(schema.TABLES))
        self.assertEqual(len(tables["lineitem"]), 16)
        self.assertEqual(dict(tables["lineitem"])["l_shipdate"], "DATE")
        self.assertEqual(dict(tables["lineitem"])["l_quantity"], "DECIMAL(15,2)")
        indexes = {i.name: i for i in schema.read_indexes()}
        self.assertEqual(indexes["partsupp_part_supp"].columns, ("ps_partkey", "ps_suppkey"))
        for index in indexes.values():
            columns = dict(tables[index.table])
            for column in index.columns:
                self.assertIn(column, columns, index.name)
            self.assertEqual(index.include, (), index.name)

    def test_covering_indexes(self):
        tables = schema.read_schema()
        covering = {i.name: i for i in schema.read_indexes(paths.COVERING_INDEX_FILE)}
        cover = covering["lineitem_partkey_cover"]
        self.assertEqual(cover.columns, ("l_partkey",))
        self.assertEqual(cover.include, ("l_quantity", "l_extendedprice", "l_discount", "l_tax"))
        self.assertEqual(
            cover.sql(),
            "CREATE INDEX lineitem_partkey_cover ON lineitem (l_partkey) "
            "INCLUDE (l_quantity, l_extendedprice, l_discount, l_tax)",
        )
        for index in covering.values():
            columns = dict(tables[index.table])
            for column in index.columns + index.include:
                self.assertIn(column, columns, index.name)


if __name__ == "__main__":
    unittest.main()
