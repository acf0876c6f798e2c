"""Fixtures for kura's Python tests: a throwaway database and one with TPC-H SF 0.01."""

import pytest

import kura


@pytest.fixture
def con():
    c = kura.connect()
    yield c
    c.close()


@pytest.fixture(scope="session")
def tpch_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("tpch") / "tpch.db"
    c = kura.connect(str(path))
    kura.tpch.load(c, sf=0.01)
    c.close()
    return str(path)


@pytest.fixture
def tpch(tpch_path):
    c = kura.connect(tpch_path)
    yield c
    c.close()
