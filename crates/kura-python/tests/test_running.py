"""Statements run with the GIL released and stop when cancelled (Ctrl-C, `interrupt`)."""

import _thread
import os
import signal
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


def test_ctrl_c_cancels_a_record_batch_reader(con):
    # pyarrow reads with the GIL released, so Python cannot see the signal there: kura's own
    # SIGINT handler (chained before Python's) cancels the query. A real signal, as Ctrl-C sends.
    # Runs for minutes unless cancelled, so a read that ignores Ctrl-C cannot pass.
    reader = con.sql("select count(*) from generate_series(1, 1000000000000) a").to_arrow_reader()
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
    start = time.monotonic()
    read_for = None
    failed = None
    interrupted = False
    try:
        try:
            reader.read_next_batch()
        except KeyboardInterrupt:
            raise
        except Exception as e:  # the read's error; Python's KeyboardInterrupt follows
            failed = e
        read_for = time.monotonic() - start
        time.sleep(5)
    except KeyboardInterrupt:
        interrupted = True
        read_for = read_for or time.monotonic() - start
    assert interrupted, "Python's KeyboardInterrupt was not raised"
    assert read_for < 5, f"the read went on {read_for:.1f} s after Ctrl-C"
    assert failed is None or "Ctrl-C" in str(failed), failed
    assert con.execute("select 3").fetchone() == (3,)
