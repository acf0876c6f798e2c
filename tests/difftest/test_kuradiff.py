"""Unit tests of the differential tester itself (no database needed):
python3 -m unittest discover -s tests/difftest"""

import decimal
import re
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kuradiff import compare, slt  # noqa: E402
from kuradiff.known import duckdb_bug  # noqa: E402
from kuradiff.ast import Agg, Bin, Col, InQuery, Lit, Select, Table, size, variants  # noqa: E402
from kuradiff.schema import BOOL, DBL, INT, catalog  # noqa: E402
from kuradiff.shrink import shrink  # noqa: E402
from kuradiff.sqlgen import Generator  # noqa: E402


class GeneratorTest(unittest.TestCase):
    def test_same_seed_same_query(self):
        for seed in range(50):
            self.assertEqual(Generator(seed).query().sql(), Generator(seed).query().sql())

    def test_seeds_differ(self):
        self.assertGreater(len({Generator(s).query().sql() for s in range(100)}), 95)

    def test_covers_the_sql_it_promises(self):
        text = " ".join(Generator(s).query().sql() for s in range(600))
        for feature in ["LEFT JOIN", "RIGHT JOIN", " IN (SELECT", "EXISTS (", "BETWEEN", "LIKE",
                        "IS NULL", "CASE WHEN", "GROUP BY", "HAVING", "ORDER BY", "LIMIT",
                        "DISTINCT", "WITH ", "count(DISTINCT", "substring(", "extract(", "orders_n",
                        "customer_n", ") AS d", " OVER (", "ROWS BETWEEN", "GROUPS BETWEEN",
                        "RANGE BETWEEN", "PRECEDING AND", "row_number()", "lag(", "rank()",
                        "WITHIN GROUP (ORDER BY", "FILTER (WHERE", "string_agg(", "ROLLUP (",
                        "GROUPING SETS (", "CUBE (", "regexp_replace(", "greatest(", "split_part(",
                        "DISTINCT ON ("]:
            self.assertIn(feature, text, feature)

    def test_order_dependent_windows_end_in_a_key(self):
        """row_number, lag, first_value, ROWS frames and the like see one order of the
        rows only where the window's ORDER BY ends in columns that tell rows apart (a
        key of the table, or the group keys of a grouped query)."""
        from kuradiff.ast import Col, Window
        from kuradiff.sqlgen import ORDER_WINDOW_FUNCS
        checked = 0
        for s in range(1500):
            top = Generator(s).query()
            for q in [top] + [c for _, c in top.ctes]:
                keys = {g.sql() for g in q.group_by}
                one_group = not q.group_by and any(isinstance(e, Agg) for e, _ in q.items)
                for e, _ in q.items:
                    if not isinstance(e, Window):
                        continue
                    if e.func in ORDER_WINDOW_FUNCS or (e.frame or "").startswith("ROWS"):
                        checked += 1
                        if one_group:
                            continue
                        self.assertTrue(e.order_by, e.sql())
                        last = e.order_by[-1][0]
                        self.assertTrue(isinstance(last, Col) or last.sql() in keys, e.sql())
        self.assertGreater(checked, 20)

    def test_only_double_division_and_only_constant_divisors(self):
        divisions = 0
        for s in range(400):
            for node in _walk(Generator(s).query()):
                if isinstance(node, Bin) and node.op == "/":
                    divisions += 1
                    self.assertIsInstance(node.right, Lit)
                    self.assertEqual(node.left.kind, DBL)
                    self.assertNotEqual(node.right.text, "0")
        self.assertGreater(divisions, 0)

    def test_limit_only_under_a_total_order(self):
        for s in range(400):
            q = Generator(s).query()
            if q.limit is not None:
                self.assertTrue(q.total_order(), q.sql())

    def test_distinct_on_only_under_a_total_order_without_doubles(self):
        """DISTINCT ON keeps the first row of each group: fixed only when the
        ORDER BY names every column and no double (equal in one engine, apart in
        the last bits in the other) is among them."""
        seen = 0
        for s in range(600):
            q = Generator(s).query()
            if q.distinct_on:
                seen += 1
                self.assertTrue(q.total_order(), q.sql())
                self.assertFalse(q.distinct, q.sql())
                self.assertFalse(any(e.kind == DBL for e, _ in q.items), q.sql())
        self.assertGreater(seen, 5)

    def test_joins_follow_keys(self):
        """Every join is an equality of two key columns of the same kind of key (a derived
        table's columns are named c0, c1, ... and carry their source's key)."""
        labels = {c.name: c.key for cols in catalog().values() for c in cols if c.key}
        joins = 0
        for s in range(300):
            for j in Generator(s).query().joins:
                eq = j.on if j.on.op == "=" else j.on.left
                self.assertEqual(eq.op, "=", j.sql())
                a, b = eq.left, eq.right
                self.assertIsInstance(a, Col)
                self.assertIsInstance(b, Col)
                la, lb = labels.get(a.name), labels.get(b.name)
                if la and lb:
                    self.assertEqual(la, lb, j.sql())
                else:
                    derived = [n for n in (a.name, b.name) if re.fullmatch(r"c\d+", n)]
                    self.assertTrue(derived, j.sql())
                joins += 1
        self.assertGreater(joins, 100)


class CompareTest(unittest.TestCase):
    def test_numbers_within_tolerance(self):
        self.assertIsNone(compare.differences([(decimal.Decimal("25.5"),)], [(25.5000000000001,)], True))
        self.assertIsNotNone(compare.differences([(decimal.Decimal("25.5"),)], [(25.51,)], True))

    def test_integers_exact(self):
        self.assertIsNotNone(compare.differences([(10**15,)], [(10**15 + 1,)], True))

    def test_null_is_not_zero_nor_empty(self):
        self.assertIsNotNone(compare.differences([(None,)], [(0,)], True))
        self.assertIsNotNone(compare.differences([(None,)], [("",)], True))

    def test_order_only_where_asked(self):
        a, b = [(1,), (2,)], [(2,), (1,)]
        self.assertIsNone(compare.differences(a, b, False))
        self.assertIsNotNone(compare.differences(a, b, True))

    def test_rows_whose_sort_keys_tie_within_the_tolerance_may_swap(self):
        # DuckDB: avg of DECIMALs in DOUBLE; 0.09 / 3 sorts below 0.03 there, so
        # the second key never decides; in kura (and PostgreSQL) they tie.
        order = [(1, "ASC", "NULLS FIRST"), (2, "ASC", "NULLS LAST")]
        duck = [(0.09 / 3, 3), (0.03, 1)]
        kura = [(decimal.Decimal("0.03"), 1), (decimal.Decimal("0.03"), 3)]
        self.assertIsNone(compare.differences(duck, kura, True, order))
        self.assertIsNotNone(compare.differences(duck, kura, True))
        # Not sorted by the second key: wrong.
        self.assertIsNotNone(compare.differences([(0.03, 1), (0.03, 3)], list(reversed(kura)), True, order))
        # Different rows: wrong, however they are ordered.
        self.assertIsNotNone(compare.differences(duck, [(0.03, 1), (0.03, 2)], True, order))
        # DESC and NULLS FIRST are followed.
        desc = [(1, "DESC", "NULLS FIRST")]
        self.assertIsNone(compare.differences([(None,), (2,), (1,)], [(None,), (2,), (1,)], True, desc))
        self.assertIsNotNone(compare.differences([(None,), (2,), (1,)], [(2,), (None,), (1,)], True, desc))

    def test_near_equal_doubles_in_the_first_key_may_reorder_the_next(self):
        """DuckDB's stddev of equal spreads differs in the last bits from group
        to group, so its ORDER BY stddev, x orders x differently than kura's."""
        a, b = 0.47140452079103146, 0.4714045207910317
        expected = [(0.0, 9), (a, 832), (a, 1130), (b, 166), (b, 835)]
        actual = [(0.0, 9), (b, 166), (b, 832), (b, 835), (b, 1130)]
        order = [(1, "ASC", "NULLS LAST"), (2, "ASC", "NULLS LAST")]
        self.assertIsNone(compare.differences(expected, actual, True, order))
        self.assertIsNotNone(compare.differences(expected, actual[:4] + [(b, 1131)], True, order))

    def test_unordered_rows_pair_up_when_near_equal_doubles_round_apart(self):
        # A running average of a constant differs in the last bits between the
        # engines; cut to 9 digits, these two still round apart, and the next
        # column (distinct in every row) pairs them.
        x1, x2 = 1.00000000049999, 1.00000000050001
        self.assertIsNone(compare.differences([(x1, 0.5), (x2, 0.25)], [(x2, 0.5), (x1, 0.25)], False))
        self.assertIsNotNone(compare.differences([(x1, 0.5), (x2, 0.25)], [(x2, 0.5), (x1, 0.5)], False))

    def test_char_padding_ignored_but_not_inner_text(self):
        self.assertIsNone(compare.differences([("MAIL",)], [("MAIL      ",)], True))
        self.assertIsNotNone(compare.differences([("MAIL",)], [("MAIl",)], True))

    def test_row_counts(self):
        self.assertIn("rows", compare.differences([(1,)], [(1,), (1,)], False))


class ShrinkTest(unittest.TestCase):
    def test_shrinks_to_the_culprit(self):
        culprit = InQuery(BOOL, Col(INT, "t", "a"), Select([(Col(INT, "s", "b"), "v")], Table("u", "s")), True)
        noise = [Bin(BOOL, ">", Col(INT, "t", "c"), Lit("5", INT)), Bin(BOOL, "<", Col(INT, "t", "d"), Lit("9", INT))]
        q = Select([(Col(INT, "t", "a"), "x0"), (Agg(INT, "count", None), "x1")], Table("t", "t"),
                   where=noise[:1] + [culprit] + noise[1:], order_by=[(1, "ASC", "NULLS LAST"), (2, "DESC", "NULLS FIRST")])
        small = shrink(q, lambda c: "NOT IN (SELECT" in c.sql())
        self.assertIn("NOT IN (SELECT", small.sql())
        self.assertEqual(len(small.where), 1)
        self.assertEqual(len(small.items), 1)
        self.assertLess(size(small), size(q))

    def test_variants_are_smaller_or_same_shape(self):
        q = Generator(7).query()
        self.assertTrue(any(size(v) < size(q) for v in variants(q)))


class SltTest(unittest.TestCase):
    def test_render(self):
        text = slt.render(
            "SELECT count(*) FROM orders_n", {"execution_mode": "ooo", "enable_index": "off"},
            ["BIGINT"], [(7,)], True, ["a header"],
        )
        self.assertIn("CREATE TABLE orders_n AS", text)
        self.assertIn("SET execution_mode = 'ooo'", text)
        self.assertIn("query I\nSELECT count(*) FROM orders_n\n----\n7\n", text)

    def test_unordered_rows_sorted_with_rowsort(self):
        text = slt.render("SELECT a FROM t", {}, ["VARCHAR"], [("b",), (None,), ("",)], False, [])
        self.assertIn("query T rowsort", text)
        self.assertTrue(text.endswith("----\n(empty)\nNULL\nb\n"))


def _walk(node):
    from dataclasses import fields

    yield node
    for f in fields(node):
        v = getattr(node, f.name)
        items = v if isinstance(v, list) else [v]
        for item in items:
            parts = item if isinstance(item, tuple) else (item,)
            for p in parts:
                if hasattr(p, "sql") and hasattr(p, "__dataclass_fields__"):
                    yield from _walk(p)


class DuckDBBugTest(unittest.TestCase):
    def test_more_rows_than_the_limit_is_duckdbs_error(self):
        from kuradiff.known import duckdb_over_limit
        q = Generator(1).query()
        q.limit = 1
        self.assertTrue(duckdb_over_limit(q, ["rows", [INT], [(None,), (None,)]]))
        self.assertFalse(duckdb_over_limit(q, ["rows", [INT], [(None,)]]))
        q.limit = None
        self.assertFalse(duckdb_over_limit(q, ["rows", [INT], [(None,), (None,)]]))

    def test_date_equals_integer_refused_as_postgresql_refuses_it(self):
        from kuradiff.known import known_refusal
        sql = "SELECT 1 FROM orders AS t1 WHERE (t1.o_orderdate = 19950101)"
        self.assertTrue(known_refusal(sql, "operator does not exist: DATE = INTEGER"))
        self.assertFalse(known_refusal(sql, "column does not exist"))

    def test_internal_errors_are_duckdbs_not_refusals(self):
        self.assertTrue(duckdb_bug('INTERNAL Error: Failed to bind column reference "c0" [2.0]'))
        self.assertTrue(duckdb_bug("Invalid Input Error: BindBuiltinScalarFunction did not return a BoundFunctionExpression"))
        self.assertFalse(duckdb_bug('Binder Error: Referenced column "x" not found'))


if __name__ == "__main__":
    unittest.main()
