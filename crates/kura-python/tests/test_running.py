"""Statements run with the GIL released and stop when cancelled (Ctrl-C, `interrupt`)."""

import _thread
import threading
import time

import pytest

import kura

LONG = "select count(*) from generate_series(1, 2000000000) a"


def test_other_threads_run_while_a_query_runs(tpch):
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    for _ in range(3):
        tpch.sql("select l_orderkey, sum(l_quantity) from lineitem group by 1 order by 2 desc").fetchall()
    stop.set()
    t.join()
    assert len(ticks) > 5


def test_keyboard_interrupt_cancels(con):
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        con.execute(LONG)
    assert time.monotonic() - start < 30
    # The connection is usable afterwards.
    assert con.execute("select 1").fetchone() == (1,)


def test_interrupt_from_another_thread(con):
    timer = threading.Timer(0.5, con.interrupt)
    timer.start()
    with pytest.raises(kura.OperationalError) as e:
        con.execute(LONG)
    assert e.value.sqlstate == "57014"
    assert con.execute("select 2").fetchone() == (2,)
