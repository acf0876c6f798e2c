"""kura's differential tester against DuckDB (see __main__.py)."""
