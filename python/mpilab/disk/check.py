"""`mpilab disk check`: measure every disk and print configured against measured."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mpilab.disk import dev
from mpilab.disk.spec import Disk, DiskSpec
from mpilab.errors import MpilabError


def expected_random_seek(d: Disk, span: float) -> float:
    """Mean cost of a seek between two uniformly random offsets of a span of `span` bytes
    under the model: E[sqrt(|X-Y|)] = 8/15 for X, Y uniform on [0, 1], plus half a
    revolution."""
    rot = 30.0 / d.rpm if d.rpm else 0.0
    f = min(1.0, span / d.size) ** 0.5
    return d.seek_min + (d.seek_max - d.seek_min) * 8.0 / 15.0 * f + rot


def measure(prefix: str, d: Disk, mount: str, seconds: float) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2]) + (
        ":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, "-m", "mpilab.disk.probe", mount, d.model, str(d.read_iops),
           str(d.write_iops), str(d.read_bw), str(d.write_bw), str(seconds)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False,
                           timeout=600, preexec_fn=lambda: dev.join_cgroup(prefix))  # noqa: PLW1509
    except (OSError, subprocess.SubprocessError) as e:
        raise MpilabError(f"disk {d.name}: probe failed: {e}") from None
    if p.returncode != 0:
        raise MpilabError(f"disk {d.name}: probe failed: "
                          f"{(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(p.stdout)


def check(prefix: str, seconds: float, tolerance: float | None) -> tuple[list[dict[str, Any]], int]:
    st = dev.load_state(prefix)
    if st is None:
        raise MpilabError(f"disks '{prefix}' are not up")
    sp = DiskSpec.from_dict(st["spec"])
    rows: list[dict[str, Any]] = []
    bad = 0
    for d in sp.disks:
        if d.name not in st["disks"]:
            raise MpilabError(f"{dev.state_dir(prefix) / 'state.json'}: disk {d.name} was "
                              f"not made (an interrupted `up`): `mpilab disk down --prefix "
                              f"{prefix}` and up again")
        m = measure(prefix, d, st["disks"][d.name]["mount"], seconds)
        row: dict[str, Any] = {"disk": d.name, "model": d.model, "measured": m}
        if d.model == "throttle":
            conf = {"read_iops": d.read_iops, "write_iops": d.write_iops,
                    "read_bw": d.read_bw, "write_bw": d.write_bw}
        else:
            # random 4 KiB reads, 8 in flight: back to back on the modelled timeline
            conf = {"read_iops": 1.0 / (expected_random_seek(d, m["range"]) + 4096 / d.rate),
                    "read_bw": d.rate, "write_bw": d.rate}
        row["configured"] = conf
        errs = {}
        for k, v in conf.items():
            got = m.get(k, {}).get("median", math.nan)
            errs[k] = got / v - 1.0 if v else math.nan
        row["rel_error"] = errs
        if tolerance is not None and any(not abs(e) <= tolerance for e in errs.values()):
            bad += 1
        rows.append(row)
    return rows, bad


def print_rows(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        m = r["measured"]
        print(f"disk {r['disk']} ({r['model']}):")
        if "seek" in m:
            s = m["seek"]
            print(f"  one request at a time: random 4 KiB read {s['random_s'] * 1e3:.2f} ms, "
                  f"sequential {s['sequential_s'] * 1e3:.2f} ms (FUSE and wake-up overhead), "
                  f"seek cost {s['seek_s'] * 1e3:.2f} ms")
        for k, v in r["configured"].items():
            unit, scale = ("MB/s", 1e-6) if k.endswith("_bw") else ("IOPS", 1.0)
            got = m[k]
            print(f"  {k}: configured {v * scale:.1f} {unit}, measured {got['median'] * scale:.1f}"
                  f" [{got['min'] * scale:.1f}, {got['max'] * scale:.1f}] {unit}, "
                  f"{r['rel_error'][k]:+.1%}")
