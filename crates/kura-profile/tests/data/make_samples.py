#!/usr/bin/env python3
"""Writes the recorded sample files the kura-profile tests read, field by field
from the documented layouts, so that the parsers are tested on machines without
PEBS or IBS.

pebs_load_latency.bin: perf record stream (include/uapi/linux/perf_event.h) of
  PERF_RECORD_SAMPLE (type 9) records with sample_type
  IP | TID | TIME | ADDR | CALLCHAIN | WEIGHT | DATA_SRC, as the kernel writes
  Intel PEBS load-latency samples (event mem-loads, ldlat), plus one
  PERF_RECORD_MMAP (type 1) record the parser must skip.
ibs_op.bin: PERF_RECORD_SAMPLE records with sample_type IP | TID | TIME | RAW,
  as the kernel writes AMD ibs_op samples: RAW = u32 caps, then the MSRs
  IbsOpCtl, IbsOpRip, IbsOpData, IbsOpData2, IbsOpData3, IbsDcLinAd,
  IbsDcPhysAd (u64 each; bit layouts of arch/x86/include/asm/amd-ibs.h).

The samples themselves are listed in the tables below; the tests check the
parsed values against them.

pebs_q3.bin and ibs_q3.bin: the same layouts, with samples placed inside the
memory objects of a real run, q3_run.json (TPC-H Q3 at SF 0.01 with kura's
memory-object registry on; written by kura-cli's tests/registry_log.rs with
KURA_WRITE_RECORDED_RUN). Each sample is given as (object, operator): the
script finds the object's registration in the log, a thread and a time at which
that thread ran that operator while the object held its range, and an address
inside it, and checks with its own replay of the log that the address belongs
to that object at that time. The tests then attribute the samples with kura's
replay and check the counts per object and per (operator, object).
"""
import json
import struct

IP, TID, TIME, ADDR, CALLCHAIN, RAW, WEIGHT, DATA_SRC = (
    1 << 0, 1 << 1, 1 << 2, 1 << 3, 1 << 5, 1 << 10, 1 << 14, 1 << 15)
PERF_CONTEXT_USER = (1 << 64) - 512


def record(kind, body):
    return struct.pack("<IHH", kind, 0, 8 + len(body)) + body


def data_src(level_num, remote=0):
    op_load = 0x2
    lvl_hit = 0x2
    return op_load | (lvl_hit << 5) | (level_num << 33) | (remote << 37)


L1, L2, L3, LFB, RAM = 0x1, 0x2, 0x3, 0xc, 0xd

# (ip, tid, time, addr, callchain, weight, data_src)
PEBS = [
    (0x401010, 100, 1_000, 0x7f0000001000, [0x500000], 4, data_src(L1)),
    (0x401010, 100, 2_000, 0x7f0000001040, [0x500000], 210, data_src(RAM)),
    (0x401020, 100, 3_000, 0x7f0000002000, [0x500000], 42, data_src(L3)),
    (0x402000, 101, 4_000, 0x7f0000003000, [0x500100], 230, data_src(RAM)),
    (0x402000, 101, 5_000, 0x7f0000003040, [0x500100], 14, data_src(L2)),
    (0x402008, 101, 6_000, 0x7f0000003080, [0x500100], 9, data_src(LFB)),
]


def pebs(samples=PEBS, mmap=True):
    out = b""
    # A PERF_RECORD_MMAP: pid, tid, addr, len, pgoff, filename (padded to 8).
    name = b"/kura\0\0\0"
    if mmap:
        out += record(1, struct.pack("<IIQQQ", 1, 1, 0x400000, 0x10000, 0) + name)
    for ip, tid, time, addr, chain, weight, src in samples:
        body = struct.pack("<QIIQQ", ip, 1, tid, time, addr)
        frames = [PERF_CONTEXT_USER, ip] + chain
        body += struct.pack("<Q", len(frames)) + struct.pack(f"<{len(frames)}Q", *frames)
        body += struct.pack("<QQ", weight, src)
        out += record(9, body)
    return out


def ibs_data3(load, dc_miss, l2_miss, lat, lin_valid):
    return (load | (dc_miss << 7) | (lin_valid << 17) | (l2_miss << 20)
            | (lat << 32))


# (rip, tid, time, data3 fields (load, dc_miss, l2_miss, latency, lin_valid), data2 src, lin addr)
IBS = [
    (0x401010, 200, 10_000, (1, 0, 0, 0, 1), 0, 0x7f0000010000),
    (0x401010, 200, 11_000, (1, 1, 1, 320, 1), 3, 0x7f0000010040),
    (0x401020, 200, 12_000, (1, 1, 0, 25, 1), 0, 0x7f0000020000),
    (0x402000, 201, 13_000, (1, 1, 1, 90, 1), 2, 0x7f0000030000),
    (0x402010, 201, 14_000, (0, 0, 0, 0, 0), 0, 0),  # not a load (an ALU op)
]


def ibs(samples=IBS):
    out = b""
    for rip, tid, time, d3, src, lin in samples:
        regs = [0x0, rip, 0x0, src, ibs_data3(*d3), lin, 0]
        raw = struct.pack("<I", 0x1f) + struct.pack("<7Q", *regs)
        body = struct.pack("<QIIQ", rip, 1, tid, time)
        body += struct.pack("<I", len(raw)) + raw
        out += record(9, body)
    return out


IDLE = (1 << 32) - 1


class Run:
    """The registry log and operator switches of a recorded run."""

    def __init__(self, path):
        with open(path) as f:
            run = json.load(f)
        self.events = []
        for e in run["registry"]["events"]:
            (kind, body), = e["event"].items()
            start, end = body["start"], body["start"] + body["len"]
            self.events.append((e["time"], kind, start, end, body.get("object")))
        self.names = {int(n): label for n, label in run["names"].items()}
        self.transitions = {int(t): log for t, log in run["transitions"].items()}
        self.end = self.events[-1][0] + 1_000_000

    def owner(self, time, addr):
        """The object holding addr at time: the last event at or before time
        that covers it, if that is a map (a later map replaces an earlier one;
        an unmap or a partial remap leaves nothing else there)."""
        found = None
        for t, kind, start, end, obj in self.events:
            if t > time:
                break
            if start <= addr < end:
                found = obj if kind == "Map" else None
        return found

    def registration(self, pred, nth=0):
        """The nth map of an object matching pred: (index, time, start, end, object)."""
        hits = [(i, e) for i, e in enumerate(self.events)
                if e[1] == "Map" and pred(e[4])]
        i, (t, _, start, end, obj) = hits[nth]
        return i, t, start, end, obj

    def lifetime(self, i):
        """[from, to): while map i holds its whole range (up to the first later
        event touching it)."""
        t0, _, start, end, _ = self.events[i]
        later = [t for t, _, s, e, _ in self.events[i + 1:] if s < end and start < e]
        return t0, (min(later) if later else self.end)

    def running(self, node, t0, t1, frac):
        """A thread and a time in [t0, t1) at which it ran `node`: the point at
        `frac` of the first stretch of that operator overlapping [t0, t1)."""
        for tid, log in sorted(self.transitions.items()):
            for k, (t, n, _) in enumerate(log):
                if n != node:
                    continue
                u = log[k + 1][0] if k + 1 < len(log) else self.end
                a, b = max(t, t0), min(u, t1)
                if b - a >= 2:
                    return tid, a + 1 + int((b - a - 2) * frac)
        raise SystemExit(f"no stretch of operator #{node} in [{t0}, {t1})")

    def mark(self, tid, time):
        node = IDLE
        for t, n, _ in self.transitions[tid]:
            if t <= time:
                node = n
        return node


def frame(column):
    return lambda o: o["kind"] == "BufferFrame" and o["name"] == column


def table(name, operator):
    return lambda o: o["name"] == name and o["operator"] == operator


ORDERS_BUILD = "hash join build on orders.o_orderkey"
CUSTOMER_BUILD = "hash join build on customer.c_custkey"
GROUPS = "hash aggregation on lineitem.l_orderkey, orders.o_orderdate, orders.o_shippriority"
# Plan nodes of the recorded Q3 (the run's `names`).
SCAN_LINEITEM, PROBE_ORDERS, PROBE_CUSTOMER, AGGREGATE = 5, 4, 6, 3


def place(run, pred, nth, node, frac, offset):
    """(tid, time, addr) of a load by `node` inside the nth object matching pred."""
    i, _, start, end, obj = run.registration(pred, nth)
    t0, t1 = run.lifetime(i)
    tid, time = run.running(node, t0, t1, frac)
    addr = start + offset
    assert addr < end, (obj, offset)
    assert run.owner(time, addr) == obj, (obj, time)
    assert run.mark(tid, time) == node
    return tid, time, addr


def reused(run):
    """An address the customer join's hash table held and the aggregation's
    group table held later: the maps of both over it."""
    a = run.registration(table("hash table", CUSTOMER_BUILD))
    for k in range(50):
        try:
            b = run.registration(table("group table", GROUPS), k)
        except IndexError:
            break
        if a[2] < b[3] and b[2] < a[3]:
            return max(a[2], b[2]), a, b
    raise SystemExit("no address of the customer hash table is reused")


def q3_targets(run):
    """The placed samples (tid, time, addr) of the recorded Q3, by label."""
    addr, (ia, *_), (ib, *_) = reused(run)
    out = {}
    for label, pred, nth, node, frac, offset in [
        ("price0", frame("lineitem.l_extendedprice"), 0, SCAN_LINEITEM, 0.2, 0x40),
        ("price1", frame("lineitem.l_extendedprice"), 1, SCAN_LINEITEM, 0.5, 0x1000),
        ("price2", frame("lineitem.l_extendedprice"), 2, SCAN_LINEITEM, 0.7, 0x2000),
        ("price3", frame("lineitem.l_extendedprice"), 0, SCAN_LINEITEM, 0.9, 0x80),
        ("chain0", table("chain array", ORDERS_BUILD), 0, PROBE_ORDERS, 0.3, 0x10),
        ("chain1", table("chain array", ORDERS_BUILD), 0, PROBE_ORDERS, 0.6, 0x20),
        ("slots", table("hash table", ORDERS_BUILD), 0, PROBE_ORDERS, 0.5, 0x8),
    ]:
        out[label] = place(run, pred, nth, node, frac, offset)
    # The reused address, while each of its two owners held it.
    for label, i, node in [("reuse-join", ia, PROBE_CUSTOMER), ("reuse-agg", ib, AGGREGATE)]:
        obj = run.events[i][4]
        t0, t1 = run.lifetime(i)
        tid, time = run.running(node, t0, t1, 0.5)
        assert run.owner(time, addr) == obj
        out[label] = (tid, time, addr)
    # The orders join's chain array after it was freed: nobody's then.
    i, _, start, _, _ = run.registration(table("chain array", ORDERS_BUILD))
    _, freed = run.lifetime(i)
    tid = min(run.transitions)
    assert run.owner(freed + 10, start + 0x20) is None
    out["freed"] = (tid, freed + 10, start + 0x20)
    return out


# PEBS samples of Q3: (target, ip, weight, level)
PEBS_Q3 = [
    ("price0", 0x401010, 5, L1),
    ("price1", 0x401010, 250, RAM),
    ("price2", 0x401020, 45, L3),
    ("price3", 0x401020, 230, RAM),
    ("chain0", 0x402000, 14, L2),
    ("chain1", 0x402000, 300, RAM),
    ("slots", 0x402008, 9, LFB),
    ("reuse-join", 0x402000, 40, L3),
    ("reuse-agg", 0x402010, 280, RAM),
    ("freed", 0x402000, 7, L2),
]

# IBS ops of Q3: (target, rip, data3 fields (load, dc_miss, l2_miss, latency, lin_valid), data2 src)
IBS_Q3 = [
    ("price0", 0x401010, (1, 0, 0, 0, 1), 0),
    ("price1", 0x401010, (1, 1, 1, 320, 1), 3),
    ("chain0", 0x402000, (1, 1, 0, 25, 1), 0),
    ("reuse-agg", 0x402010, (1, 1, 1, 90, 1), 2),
    ("price2", 0x402010, (0, 0, 0, 0, 0), 0),  # not a load: no address
]


def q3_files(run_path):
    run = Run(run_path)
    at = q3_targets(run)
    pebs_q3 = [(ip, at[t][0], at[t][1], at[t][2], [0x500000], w, data_src(lvl))
               for t, ip, w, lvl in PEBS_Q3]
    ibs_q3 = [(ip, at[t][0], at[t][1], d3, src, at[t][2] if d3[4] else 0)
              for t, ip, d3, src in IBS_Q3]
    return pebs(pebs_q3, mmap=False), ibs(ibs_q3)


if __name__ == "__main__":
    with open("pebs_load_latency.bin", "wb") as f:
        f.write(pebs())
    with open("ibs_op.bin", "wb") as f:
        f.write(ibs())
    pebs_q3, ibs_q3 = q3_files("q3_run.json")
    with open("pebs_q3.bin", "wb") as f:
        f.write(pebs_q3)
    with open("ibs_q3.bin", "wb") as f:
        f.write(ibs_q3)
