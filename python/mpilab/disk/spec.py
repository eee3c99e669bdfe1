"""Disk spec files (TOML): validation with file:line errors.

    prefix = "dk"                 # optional; name prefix of everything made
    memory_limit = "192M"         # optional: memory cgroup limit of `disk run` programs
                                  # (page cache included: keeps buffered runs out of core)
    [[disk]]
    name = "a"                    # 1-6 characters a-z0-9
    size = "1G"                   # bytes (K, M, G = 2^10, 2^20, 2^30)
    model = "throttle"            # or "seek"
    read_iops = 200               # throttle: requests per second (> 0)
    write_iops = 200
    read_bw = "150MB"             # bytes per second (KB, MB, GB = 10^3.., KiB, MiB, GiB)
    write_bw = "150MB"
    read_ahead_kb = 128           # throttle: the device's readahead window (Linux's default
                                  # for disks; buffered reads are issued in chunks of it)
    # seek model: seek(d) = seek_min + (seek_max - seek_min) * sqrt(d / size) for a move
    # of d bytes (0 for d = 0), plus rotation (half a revolution: 30/rpm s) per seek,
    # plus length / rate
    seek_min = "0.5ms"
    seek_max = "8ms"
    rpm = 7200
    rate = "150MB"
    elevator = false              # serve queued requests in ascending offset order
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from mpilab import tomlread
from mpilab.errors import MpilabError
from mpilab.fsutil import read_regular
from mpilab.testbed.spec import _Ctx, _int_in, _str

DEFAULT_PREFIX = "mdk"
PREFIX_RE = re.compile(r"^[a-z][a-z0-9]{0,5}$")
NAME_RE = re.compile(r"^[a-z0-9]{1,6}$")
MODELS = ("throttle", "seek")
_SIZE = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_RATE = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 1024, "mib": 1024**2,
         "gib": 1024**3}
_TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
_KEYS = {"name", "size", "model", "read_iops", "write_iops", "read_bw", "write_bw",
         "seek_min", "seek_max", "rpm", "rate", "elevator", "read_ahead_kb"}
MIN_SIZE = 64 * 1024**2
MAX_RATE = 1e12  # bytes/s


def parse_size(v: object) -> int:
    # ASCII digits only ('٣' is a digit to \d and to int()), no blanks: the strict rule
    m = re.fullmatch(r"([0-9]+)([kmgKMG]?)", str(v)) if not isinstance(v, bool) else None
    if not m:
        raise ValueError("expected a size such as 512M or 2G")
    return int(m.group(1)) * _SIZE[m.group(2).lower()]


def parse_rate(v: object) -> int:
    """Bytes per second from "150MB" (10^6) or "150MiB" (2^20) (optional "/s")."""
    m = (re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)([kKmMgG]?i?[bB])?(?:/s)?", str(v))
         if not isinstance(v, bool) else None)
    if not m:
        raise ValueError("expected a rate in bytes/s such as 150MB or 100MiB")
    r = float(m.group(1)) * _RATE[(m.group(2) or "b").lower()]
    if r < 1:
        raise ValueError("must be at least 1 byte/s")
    if not r <= MAX_RATE:  # also inf: float() of a thousand digits does not fail
        raise ValueError("more than 1 TB/s: not a disk's rate")
    return int(r)


def parse_time(v: object) -> float:
    m = (re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(s|ms|us)", str(v))
         if not isinstance(v, bool) else None)
    if not m:
        raise ValueError("expected a time such as 8ms")
    t = float(m.group(1)) * _TIME[m.group(2)]
    if not math.isfinite(t):
        raise ValueError("expected a time such as 8ms (out of range)")
    return t


@dataclass
class Disk:
    """One emulated disk. Sizes and rates in bytes and bytes/s, times in s."""

    name: str
    size: int
    model: str = "throttle"
    read_iops: int = 200
    write_iops: int = 200
    read_bw: int = 150 * 10**6
    write_bw: int = 150 * 10**6
    seek_min: float = 0.0005
    seek_max: float = 0.008
    rpm: int = 7200
    rate: int = 150 * 10**6
    elevator: bool = False
    read_ahead_kb: int = 128


@dataclass
class DiskSpec:
    prefix: str = DEFAULT_PREFIX
    disks: list[Disk] = field(default_factory=list)
    source: str = "<default>"
    memory_limit: int = 0  # bytes; 0 = none

    def to_dict(self) -> dict[str, Any]:
        return {"prefix": self.prefix, "source": self.source, "memory_limit": self.memory_limit,
                "disks": [asdict(d) for d in self.disks]}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> DiskSpec:
        return DiskSpec(d["prefix"], [Disk(**x) for x in d["disks"]], d.get("source", "?"),
                        d.get("memory_limit", 0))


def _bool(v: object) -> bool:
    if not isinstance(v, bool):
        raise ValueError("expected true or false")
    return v


def mem_available() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def load_text(text: str, source: str, prefix: str | None = None) -> DiskSpec:
    data = tomlread.loads(text, source)
    ctx = _Ctx(source, text)
    for key in data:
        if key not in ("prefix", "disk", "memory_limit"):
            raise ctx.err("", key, "unknown key")
    sp = DiskSpec(source=source)
    if "prefix" in data:
        try:
            sp.prefix = _str(data["prefix"])
        except ValueError as e:
            raise ctx.err("", "prefix", str(e)) from None
    if prefix:
        sp.prefix = prefix
    if "memory_limit" in data:
        try:
            sp.memory_limit = parse_size(data["memory_limit"])
        except ValueError as e:
            raise ctx.err("", "memory_limit", f"{data['memory_limit']!r}: {e}") from None
        if sp.memory_limit < 16 * 1024**2:
            raise ctx.err("", "memory_limit", "at least 16M")
    if not PREFIX_RE.fullmatch(sp.prefix):
        raise ctx.err("", "prefix", f"{sp.prefix!r}: must be 1-6 characters a-z0-9, "
                      "starting with a letter")
    disks = data.get("disk")
    if not isinstance(disks, list) or not disks:
        raise ctx.err("", "disk", "at least one [[disk]] table is required")
    names: set[str] = set()
    for i, t in enumerate(disks):
        if not isinstance(t, dict):
            raise ctx.err("", "disk", "must be an array of tables", i)
        for key in t:
            if key not in _KEYS:
                raise ctx.err("disk", key, "unknown key", i)

        def get(key: str, conv: Any, default: Any, t: dict[str, Any] = t, i: int = i) -> Any:
            if key not in t:
                return default
            try:
                return conv(t[key])
            except ValueError as e:
                raise ctx.err("disk", key, f"{t[key]!r}: {e}", i) from None

        if "name" not in t:
            raise ctx.err("disk", "", "name is required", i)
        name = get("name", _str, "")
        if not NAME_RE.fullmatch(name) or name in names:
            raise ctx.err("disk", "name", f"{name!r}: must be 1-6 characters a-z0-9 and unique",
                          i)
        names.add(name)
        d = Disk(name=name, size=get("size", parse_size, 1024**3))
        if d.size < MIN_SIZE:
            raise ctx.err("disk", "size", f"{d.size} bytes: at least 64M", i)
        d.model = get("model", _str, "throttle")
        if d.model not in MODELS:
            raise ctx.err("disk", "model", f"{d.model!r}: expected throttle or seek", i)
        d.read_iops = get("read_iops", _int_in(1, 10**7), d.read_iops)
        d.write_iops = get("write_iops", _int_in(1, 10**7), d.write_iops)
        d.read_bw = get("read_bw", parse_rate, d.read_bw)
        d.write_bw = get("write_bw", parse_rate, d.write_bw)
        d.seek_min = get("seek_min", parse_time, d.seek_min)
        d.seek_max = get("seek_max", parse_time, d.seek_max)
        d.rpm = get("rpm", _int_in(0, 100000), d.rpm)
        d.rate = get("rate", parse_rate, d.rate)
        d.elevator = get("elevator", _bool, False)
        d.read_ahead_kb = get("read_ahead_kb", _int_in(0, 1 << 20), d.read_ahead_kb)
        if d.seek_max < d.seek_min or d.seek_max > 1.0:
            raise ctx.err("disk", "seek_max", "must be >= seek_min and <= 1s", i)
        sp.disks.append(d)
    total = sum(d.size for d in sp.disks)
    avail = mem_available()
    if avail and total > 0.8 * avail:
        raise MpilabError(f"{source}: disks of {total} bytes in all would not fit in memory "
                          f"(tmpfs-backed; {avail} bytes available, at most 80% used)")
    return sp


def load(path: str, prefix: str | None = None) -> DiskSpec:
    data = read_regular(path, "disk spec", 16 << 20)  # a FIFO would block, /dev/zero not end
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise MpilabError(f"{path}: not UTF-8 text") from None
    return load_text(text, path, prefix or os.environ.get("MPILAB_DISK_PREFIX"))
