"""`mpilab disk up|status|check|run|down`."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from mpilab import actions, argtypes
from mpilab.disk import check as checkmod
from mpilab.disk import dev
from mpilab.disk import spec as specmod
from mpilab.errors import MpilabError


def _prefix(args: argparse.Namespace) -> str:
    # an empty --prefix is a mistake, not "the default" (it removed the default's disks);
    # fullmatch: the pattern's $ also matches before a trailing newline
    p = (args.prefix if args.prefix is not None
         else os.environ.get("MPILAB_DISK_PREFIX") or specmod.DEFAULT_PREFIX)
    if not specmod.PREFIX_RE.fullmatch(p):
        raise MpilabError(f"--prefix {p!r}: must be 1-6 characters a-z0-9, starting with a letter")
    return p


def cmd_up(args: argparse.Namespace) -> int:
    if args.prefix is not None:
        _prefix(args)  # checked before the spec is read
    sp = specmod.load(args.spec, args.prefix)
    st = dev.up(sp)
    for name, info in st["disks"].items():
        extra = f" on {info['dev']} ({info['devnum']})" if info.get("dev") else ""
        print(f"disk {name} ({info['model']}): {info['mount']}{extra}")
    print(f"disks '{sp.prefix}' up; run programs on them with "
          f"`mpilab disk run --prefix {sp.prefix} -- CMD`")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    prefix = _prefix(args)
    removed = dev.down(prefix)
    print(f"disks '{prefix}' down" + (f": removed {', '.join(removed)}" if removed
                                      else " (nothing recorded)"))
    return 0


def _rotation(rpm: Any) -> str:
    """A seek disk's spindle as status prints it: rpm = 0 is a disk without rotational
    delay (mpilab-seekfs --rpm 0), not a spindle at 0 rpm."""
    return "no rotational delay (rpm 0)" if rpm == 0 else f"{rpm} rpm"


def cmd_status(args: argparse.Namespace) -> int:
    info = dev.status(_prefix(args))
    if args.json:
        print(json.dumps(info, indent=1))
        return 0
    if not info["up"]:
        print(f"disks '{info['prefix']}': down")
        return 0
    print(f"disks '{info['prefix']}' ({info['spec']['source']}), cgroup {info['cgroup']}, "
          f"processes in it: {info['pids'] or 'none'}")
    for d, s in zip(info["disks"], info["spec"]["disks"], strict=True):
        if "mount" not in d:
            print(f"  {d['name']}: not made (an interrupted `up`; `mpilab disk down --prefix "
                  f"{info['prefix']}` removes what was)")
        elif s["model"] == "throttle":
            lim = d.get("limits", {})
            print(f"  {d['name']}: throttle {s['size']} bytes at {d['mount']} on {d.get('dev')}, "
                  f"read {lim.get('read_iops_device', '?')} IOPS / "
                  f"{lim.get('read_bps_device', '?')} B/s, "
                  f"write {lim.get('write_iops_device', '?')} IOPS / "
                  f"{lim.get('write_bps_device', '?')} B/s, mounted {d['mounted']}")
        else:
            print(f"  {d['name']}: seek {s['size']} bytes at {d['mount']}: seek "
                  f"{s['seek_min'] * 1e3:.2f}-{s['seek_max'] * 1e3:.2f} ms, {_rotation(s['rpm'])}, "
                  f"{s['rate'] / 1e6:.0f} MB/s, elevator {s['elevator']}, mounted {d['mounted']}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    rows, bad = checkmod.check(_prefix(args), args.seconds, args.tolerance)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        checkmod.print_rows(rows)
    return 1 if bad else 0


def cmd_run(args: argparse.Namespace) -> int:
    cmd = list(args.program)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    return dev.run_in(_prefix(args), cmd, args.timeout)


def register(subparsers: Any) -> None:
    add = actions.group(subparsers, "disk", "emulated disks: request/bandwidth caps, seek model",
                        "name prefix (default $MPILAB_DISK_PREFIX or mdk)")

    p = add("up", cmd_up, "make the disks of SPEC (TOML; see docs/disk.md)")
    p.add_argument("spec", help="disk spec file")
    add("down", cmd_down, "remove exactly what `up` made (also after a crash)")
    p = add("status", cmd_status, "show the disks, their limits and mounts")
    p.add_argument("--json", action="store_true", help="machine-readable")
    p = add("check", cmd_check, "measure every disk: configured against measured")
    p.add_argument("--seconds", type=argtypes.duration, default=1.0,
                   help="target duration of each measurement in s (default 1)")
    p.add_argument("--tolerance", type=argtypes.tolerance,
                   help="exit 1 if a figure is off by more than this fraction")
    p.add_argument("--json", action="store_true", help="machine-readable")
    p = add("run", cmd_run, "run a command inside the disks' cgroup (under their caps)")
    p.add_argument("--timeout", type=argtypes.duration,
                   help="kill the command after this many seconds")
    p.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS")
