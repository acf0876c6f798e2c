"""TPC-H in a kura connection: `kura.tpch.load(con, sf=0.1)` generates and loads the eight
tables (tpchgen, in process) with their primary-key indexes."""


def load(connection, sf=0.1, indexes=True):
    """Generates TPC-H at scale factor `sf` into `connection` (replacing its TPC-H tables);
    returns {table: rows}."""
    return dict(connection._native_open().tpch_load(float(sf), bool(indexes)))
