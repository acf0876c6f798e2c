"""Arrow results as pandas and polars frames, and the imports they need."""

from ._kura import InterfaceError


def arrow_module():
    """pyarrow, or an InterfaceError saying how to get it."""
    try:
        import pyarrow
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise InterfaceError("results as Arrow need pyarrow: pip install pyarrow") from e
    return pyarrow


def to_pandas(table):
    """A pyarrow Table as a pandas DataFrame. As DuckDB's `df()` does, DECIMAL becomes float64
    and DATE datetime64 (pandas' own types, not a Python object per value)."""
    pa = arrow_module()
    schema = pa.schema([
        f.with_type(pa.float64()) if pa.types.is_decimal(f.type) else f for f in table.schema
    ])
    if schema != table.schema:
        table = table.cast(schema)
    return table.to_pandas(date_as_object=False)


def to_polars(table):
    """A pyarrow Table as a polars DataFrame."""
    try:
        import polars
    except ImportError as e:
        raise InterfaceError("results as polars need polars: pip install polars") from e
    return polars.from_arrow(table)
