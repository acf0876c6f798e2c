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
"""
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


def pebs():
    out = b""
    # A PERF_RECORD_MMAP: pid, tid, addr, len, pgoff, filename (padded to 8).
    name = b"/kura\0\0\0"
    out += record(1, struct.pack("<IIQQQ", 1, 1, 0x400000, 0x10000, 0) + name)
    for ip, tid, time, addr, chain, weight, src in PEBS:
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


def ibs():
    out = b""
    for rip, tid, time, d3, src, lin in IBS:
        regs = [0x0, rip, 0x0, src, ibs_data3(*d3), lin, 0]
        raw = struct.pack("<I", 0x1f) + struct.pack("<7Q", *regs)
        body = struct.pack("<QIIQ", rip, 1, tid, time)
        body += struct.pack("<I", len(raw)) + raw
        out += record(9, body)
    return out


if __name__ == "__main__":
    with open("pebs_load_latency.bin", "wb") as f:
        f.write(pebs())
    with open("ibs_op.bin", "wb") as f:
        f.write(ibs())
