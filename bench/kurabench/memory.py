"""Peak memory (RSS) of the process that runs a query, from Linux's /proc: the peak is reset
through clear_refs before the query and read from VmHWM after it."""

import os
import sys

PROC = "/proc"
# Written to /proc/PID/clear_refs, resets the process's peak RSS (VmHWM) to its current RSS
# (Linux 4.0 and later); the process's owner may write it, no privilege needed.
RESET_PEAK = b"5"


class NotMeasurable(Exception):
    """Why a process's peak RSS cannot be measured (one line, for the report)."""


def status_kib(text, field):
    """The value in KiB of one `Field:  1234 kB` line of /proc/PID/status, or None."""
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name == field:
            parts = value.split()
            if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
                return int(parts[0])
    return None


def read_kib(pid, field, proc=PROC):
    """One field of the process's status in KiB; NotMeasurable when it cannot be read."""
    path = os.path.join(proc, str(pid), "status")
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise NotMeasurable(f"cannot read {path}: {e.strerror or e}") from e
    value = status_kib(text, field)
    if value is None:
        raise NotMeasurable(f"{path} has no {field} line")
    return value


def reset_peak(pid, proc=PROC, platform=None):
    """Resets the process's peak RSS; NotMeasurable when that is impossible here."""
    platform = platform or sys.platform
    if not platform.startswith("linux"):
        raise NotMeasurable(f"not Linux ({platform}): no /proc/PID/clear_refs to reset the peak")
    path = os.path.join(proc, str(pid), "clear_refs")
    try:
        # No O_CREAT: a missing clear_refs means an old kernel (or no /proc), not a file to make.
        fd = os.open(path, os.O_WRONLY)
    except OSError as e:
        raise NotMeasurable(f"cannot write {path}: {e.strerror or e}") from e
    try:
        os.write(fd, RESET_PEAK)
    except OSError as e:
        raise NotMeasurable(f"cannot reset the peak through {path}: {e.strerror or e}") from e
    finally:
        os.close(fd)


def begin(pid, proc=PROC, platform=None):
    """Before a query: resets the peak and returns the RSS now (KiB), the query's baseline."""
    reset_peak(pid, proc, platform)
    return read_kib(pid, "VmRSS", proc)


def peak(pid, proc=PROC):
    """After a query: the peak RSS (KiB) since `begin`."""
    return read_kib(pid, "VmHWM", proc)


def mib(kib):
    return kib / 1024
