"""The machine a run happened on (CPU, cores, RAM, disk, kernel), for the report, and
dropping the OS page cache before cold runs where that is permitted."""

import os
import platform
import subprocess


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def cpu_model():
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def ram_gib():
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) / 1024 / 1024
    return None


def disk_of(path):
    """'device (filesystem, size, rotational/SSD, model)' of the file system holding `path`."""
    try:
        df = subprocess.run(["df", "-PT", path], capture_output=True, text=True).stdout.splitlines()[1].split()
    except (OSError, IndexError):
        return "unknown"
    device, fstype, size_kb = df[0], df[1], int(df[2])
    text = f"{device} ({fstype}, {size_kb / 1024 / 1024:.0f} GiB"
    name = os.path.basename(device)
    base = name.rstrip("0123456789") if not name.startswith("nvme") else name.split("p")[0]
    rotational = _read(f"/sys/block/{base}/queue/rotational").strip()
    model = _read(f"/sys/block/{base}/device/model").strip()
    if rotational:
        text += ", rotational" if rotational == "1" else ", non-rotational"
    if model:
        text += f", {model}"
    return text + ")"


def describe(work_dir):
    ram = ram_gib()
    return {
        "CPU": cpu_model(),
        "cores": str(os.cpu_count()),
        "RAM": f"{ram:.1f} GiB" if ram else "unknown",
        "disk (work directory)": disk_of(work_dir),
        "kernel": f"{platform.system()} {platform.release()}",
        "Python": platform.python_version(),
    }


class CacheDropper:
    """Drops the OS page cache (sync; echo 3 > /proc/sys/vm/drop_caches) when asked and
    permitted, and remembers what happened for the report."""

    def __init__(self, enabled):
        self.enabled = enabled
        self.attempts = 0
        self.drops = 0
        self.error = None

    def __call__(self):
        if not self.enabled:
            return
        self.attempts += 1
        os.sync()
        try:
            with open("/proc/sys/vm/drop_caches", "w", encoding="ascii") as f:
                f.write("3\n")
            self.drops += 1
        except OSError as e:
            self.error = e.strerror or str(e)

    def describe(self):
        if not self.enabled:
            return "not asked for (--drop-caches no): cold runs may find data in the OS page cache"
        if self.attempts == 0:
            return "no cold runs"
        if self.drops == self.attempts:
            return f"dropped before every cold run ({self.drops} times)"
        return (
            f"not permitted ({self.error}); dropped {self.drops} of {self.attempts} times: "
            "cold runs of systems reading through the OS cache may find data there"
        )
