"""kura's benchmark suite: kura against DuckDB, PostgreSQL and SQLite on the same TPC-H data.

The entry point is `bench/run` (see `bench/README.md`); this package holds the suite
itself: loading every system from the same `.tbl` files, building the same indexes,
running the 22 TPC-H queries and the selective queries (A)-(D) of paper 003 warm and
cold, cross-checking every result, and writing a Markdown report with charts.
"""
