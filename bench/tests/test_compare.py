"""The cross-check must catch wrong answers and accept equal ones within tolerance."""

import datetime
import decimal
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kurabench import compare  # noqa: E402


class NormalizeTest(unittest.TestCase):
    def test_values_become_comparable_text(self):
        self.assertEqual(compare.normalize(None), "NULL")
        self.assertEqual(compare.normalize(decimal.Decimal("1.50")), "1.50")
        self.assertEqual(compare.normalize(decimal.Decimal("1E+3")), "1000")
        self.assertEqual(compare.normalize(datetime.date(1995, 3, 5)), "1995-03-05")
        self.assertEqual(compare.normalize("GERMANY                  "), "GERMANY")
        self.assertEqual(compare.normalize(42), "42")


class SameValueTest(unittest.TestCase):
    def test_numbers_within_tolerance_agree(self):
        self.assertTrue(compare.same_value("37734107.00", "37734107"))
        self.assertTrue(compare.same_value("2.5", "2.504"))  # absolute 0.01
        self.assertTrue(compare.same_value("56586554400.73", "56586554400.7300003"))

    def test_numbers_outside_tolerance_differ(self):
        self.assertFalse(compare.same_value("2.5", "2.52"))
        self.assertFalse(compare.same_value("1193053.2253", "734493.728099999"))

    def test_text_and_null(self):
        self.assertTrue(compare.same_value("BRAZIL", " BRAZIL "))
        self.assertFalse(compare.same_value("BRAZIL", "BRAZIK"))
        self.assertFalse(compare.same_value("NULL", "0"))
        self.assertTrue(compare.same_value("NULL", "NULL"))


class DifferencesTest(unittest.TestCase):
    expected = [("A", "F", "1.00"), ("N", "O", "2.00")]

    def test_equal_results_have_no_differences(self):
        self.assertEqual(compare.differences(self.expected, [("A", "F", "1"), ("N", "O", "2.0")]), [])

    def test_a_wrong_number_is_named(self):
        problems = compare.differences(self.expected, [("A", "F", "1.00"), ("N", "O", "3.00")])
        self.assertEqual(problems, ["row 2 column 3: '2.00' vs '3.00'"])

    def test_missing_rows_and_columns(self):
        self.assertEqual(compare.differences(self.expected, self.expected[:1]), ["2 rows expected, 1 returned"])
        self.assertEqual(
            compare.differences(self.expected, [r[:2] for r in self.expected]), ["3 columns expected, 2 returned"]
        )

    def test_order_only(self):
        problems = compare.differences(self.expected, list(reversed(self.expected)))
        self.assertTrue(compare.is_order_only(problems))

    def test_many_problems_are_summarised(self):
        expected = [(str(i),) for i in range(10)]
        actual = [(str(i + 100),) for i in range(10)]
        problems = compare.differences(expected, actual)
        self.assertEqual(len(problems), 4)
        self.assertEqual(problems[-1], "... and 7 more")


class ReadAnswerTest(unittest.TestCase):
    def test_reads_header_and_rows(self):
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write("n_name|revenue\nINDONESIA|55502041.1697\nVIETNAM  |55295086.9967\n\n")
        try:
            columns, rows = compare.read_answer(f.name)
        finally:
            os.remove(f.name)
        self.assertEqual(columns, ["n_name", "revenue"])
        self.assertEqual(rows, [("INDONESIA", "55502041.1697"), ("VIETNAM", "55295086.9967")])


if __name__ == "__main__":
    unittest.main()
