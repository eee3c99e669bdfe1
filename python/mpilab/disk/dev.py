"""Bringing emulated disks up and down.

Per disk (prefix P, disk name N, state dir S = $MPILAB_DISK_STATE_ROOT/P-disk, default
/run/P-disk):
- throttle: tmpfs mounted at S/P-N.mem, backing file S/P-N.mem/P-N.img, a loop device on
  it, ext4 on the loop device, mounted at S/P-N; the blkio cgroup P-disk caps its
  major:minor (cgroup v1 blkio.throttle.*; cgroup v2 io.max).
- seek: tmpfs at S/P-N.mem holding the files, the FUSE passthrough mpilab-seekfs
  mounting it at S/P-N.

Every step is recorded in S/state.json before it is taken ("pending") and after it
succeeded, so `down` removes exactly what was made, also after a crash; nothing is
removed that is not recorded there (a look-alike device, mount or cgroup is left alone).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from mpilab import documents
from mpilab.disk.spec import Disk, DiskSpec
from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text
from mpilab.tools import find_tool

CGROUP_ROOT = Path(os.environ.get("MPILAB_CGROUP_ROOT", "/sys/fs/cgroup"))


def state_root() -> Path:
    return Path(os.environ.get("MPILAB_DISK_STATE_ROOT", "/run"))


def state_dir(prefix: str) -> Path:
    return state_root() / f"{prefix}-disk"


def cgroup_v2() -> bool:
    return (CGROUP_ROOT / "cgroup.controllers").exists() and not (CGROUP_ROOT / "blkio").exists()


def cgroup_dir(prefix: str) -> Path:
    return (CGROUP_ROOT if cgroup_v2() else CGROUP_ROOT / "blkio") / f"{prefix}-disk"


def mem_cgroup_dir(prefix: str) -> Path:
    """The memory cgroup (v1; on v2 the one cgroup has both controllers)."""
    return cgroup_dir(prefix) if cgroup_v2() else CGROUP_ROOT / "memory" / f"{prefix}-disk"


def _run(cmd: list[str], what: str) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise MpilabError(f"{what}: {cmd[0]}: {e}") from None
    if p.returncode != 0:
        msg = (p.stderr.strip().splitlines() or ["failed"])[-1]
        raise MpilabError(f"{what}: {' '.join(cmd[:2])}: {msg}")
    return p.stdout


def mounted(path: Path) -> bool:
    try:
        with open("/proc/self/mounts") as f:
            return any(line.split()[1] == str(path) for line in f)
    except OSError:
        return False


STATE_SCHEMA = "disk-state-1.schema.json"


def load_state(prefix: str) -> dict[str, Any] | None:
    """The state `up` wrote for disks `prefix`, None when there is none. Checked against
    schemas/disk-state-1.schema.json, then: its spec names this prefix, and every path it
    records is one `up` makes for this prefix (the prefix's cgroups; mounts, loop backing
    files and statistics inside its state folder), so a damaged or foreign state never
    makes `down`, `check` or `run` unmount, detach, remove or write anything else. Any
    problem is one line naming the file."""
    path = state_dir(prefix) / "state.json"
    if not os.path.lexists(path):
        return None
    doc: dict[str, Any] = documents.load(path, "disk state", STATE_SCHEMA, limit=16 << 20)
    if doc["spec"]["prefix"] != prefix:
        raise MpilabError(f"{path}: spec.prefix is '{doc['spec']['prefix']}', not these "
                          f"disks' '{prefix}'; not acting on other disks")
    sd = str(state_dir(prefix))
    cgroups = {str(cgroup_dir(prefix)), str(mem_cgroup_dir(prefix))}
    mine = re.compile(re.escape(sd) + "/" + re.escape(prefix) + r"-[a-z0-9]{1,6}")
    for k, e in enumerate(doc["made"]):
        if e["kind"] == "cgroup":
            where, ok = "path", e["path"] in cgroups
        elif e["kind"] == "loop":
            where = "backing"
            ok = bool(re.fullmatch(mine.pattern + r"\.mem/" + re.escape(prefix) +
                                   r"-[a-z0-9]{1,6}\.img", e["backing"]))
        else:
            where, ok = "path", bool(re.fullmatch(mine.pattern + r"(\.mem)?", e["path"]))
        if not ok:
            raise MpilabError(f"{path}: made[{k}].{where}: {e[where]!r} is not one of this "
                              f"prefix's {'cgroups' if e['kind'] == 'cgroup' else 'disks'}; "
                              "not acting on it")
    for name, info in doc["disks"].items():
        for key, suffix in (("mount", ""), ("stats", r"\.stats")):
            if key in info and not re.fullmatch(re.escape(f"{sd}/{prefix}-{name}") + suffix,
                                                info[key]):
                raise MpilabError(f"{path}: disks.{name}.{key}: {info[key]!r} is not in this "
                                  "prefix's state folder; not acting on it")
    _check_made(path, prefix, doc)
    return doc


def _check_made(path: Path, prefix: str, doc: dict[str, Any]) -> None:
    """Every disk recorded as made is in the spec and its steps are in `made` (else `down`
    would leave them behind)."""
    models = {d["name"]: d["model"] for d in doc["spec"]["disks"]}
    made = {(e["kind"], e.get("path") or e.get("backing")): e for e in doc["made"]}
    sd = state_dir(prefix)
    if doc["disks"] and ("cgroup", str(cgroup_dir(prefix))) not in made:
        raise MpilabError(f"{path}: made: no cgroup entry, although disks were made "
                          "(down would leave the cgroup)")
    for name, info in doc["disks"].items():
        if models.get(name) != info["model"]:
            raise MpilabError(f"{path}: disks.{name}: not a {info['model']} disk of the spec")
        base = f"{sd}/{prefix}-{name}"
        steps = [("tmpfs", f"{base}.mem")] + (
            [("loop", f"{base}.mem/{prefix}-{name}.img"), ("mount", base)]
            if info["model"] == "throttle" else [("fuse", base)])
        for kind, where in steps:
            if (kind, where) not in made:
                raise MpilabError(f"{path}: made: no {kind} entry for disk {name} (down "
                                  "would leave it)")
        loop = made.get(("loop", f"{base}.mem/{prefix}-{name}.img"))
        # a step still pending (a crash between attaching and recording) has no device yet:
        # down finds it by its backing file
        if loop is not None and not loop.get("pending") and loop.get("dev") != info.get("dev"):
            raise MpilabError(f"{path}: disks.{name}.dev: {info.get('dev')!r}, but made "
                              f"records {loop.get('dev')!r}")


class _Log:
    """The record of what was made (written before and after every step)."""

    def __init__(self, sp: DiskSpec) -> None:
        self.sd = state_dir(sp.prefix)
        self.st: dict[str, Any] = {"spec": sp.to_dict(), "made": [], "disks": {}}

    def save(self) -> None:
        atomic_write_text(self.sd / "state.json", json.dumps(self.st, indent=1) + "\n")

    def step(self, kind: str, **kw: Any) -> dict[str, Any]:
        e = {"kind": kind, "pending": True, **kw}
        self.st["made"].append(e)
        self.save()
        return e

    def done(self, e: dict[str, Any], **kw: Any) -> None:
        e.update(kw)
        e["pending"] = False
        self.save()


def _devnum(dev: str) -> str:
    st = os.stat(dev)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def enable_v2_controllers(root: Path, memory: bool) -> None:
    """cgroup v2: a child's io.max (and memory.max) exist only when the parent enables the
    controller in cgroup.subtree_control; add what is missing (idempotent; nothing is
    removed by `down`: other cgroups may rely on it)."""
    have = (root / "cgroup.subtree_control").read_text().split()
    want = ["io"] + (["memory"] if memory else [])
    avail = (root / "cgroup.controllers").read_text().split()
    for c in want:
        if c not in avail:
            raise MpilabError(f"cgroup v2: the {c} controller is not available in {root}")
    add = [f"+{c}" for c in want if c not in have]
    if add:
        (root / "cgroup.subtree_control").write_text(" ".join(add) + "\n")


def _set_limits(cg: Path, d: Disk, devnum: str) -> None:
    if cgroup_v2():
        (cg / "io.max").write_text(f"{devnum} riops={d.read_iops} wiops={d.write_iops} "
                                   f"rbps={d.read_bw} wbps={d.write_bw}\n")
        return
    for f, v in (("read_iops_device", d.read_iops), ("write_iops_device", d.write_iops),
                 ("read_bps_device", d.read_bw), ("write_bps_device", d.write_bw)):
        (cg / f"blkio.throttle.{f}").write_text(f"{devnum} {v}\n")


def up(sp: DiskSpec) -> dict[str, Any]:
    sd = state_dir(sp.prefix)
    cg = cgroup_dir(sp.prefix)
    if load_state(sp.prefix) is not None:
        raise MpilabError(f"disks '{sp.prefix}' are already up (state in {sd}); "
                          f"`mpilab disk down --prefix {sp.prefix}` first")
    for c in (cg, mem_cgroup_dir(sp.prefix)):
        if c.exists():
            raise MpilabError(f"prefix {sp.prefix!r}: cgroup {c} exists and was not made by "
                              "mpilab disk (choose another prefix)")
    for d in sp.disks:
        for p in (sd / f"{sp.prefix}-{d.name}", sd / f"{sp.prefix}-{d.name}.mem"):
            if mounted(p):
                raise MpilabError(f"prefix {sp.prefix!r}: {p} is mounted and was not made by "
                                  "mpilab disk")
    if sd.exists() and any(sd.iterdir()):
        raise MpilabError(f"prefix {sp.prefix!r}: {sd} exists and is not a disk state dir "
                          "of mpilab (choose another prefix)")
    if not cgroup_v2() and not (CGROUP_ROOT / "blkio").is_dir():
        raise MpilabError(f"no blkio cgroup controller under {CGROUP_ROOT}")
    sd.mkdir(parents=True, exist_ok=True)
    log = _Log(sp)
    log.save()
    try:
        if cgroup_v2():
            enable_v2_controllers(CGROUP_ROOT, bool(sp.memory_limit))
        e = log.step("cgroup", path=str(cg))
        cg.mkdir()
        log.done(e)
        if sp.memory_limit:
            mcg = mem_cgroup_dir(sp.prefix)
            if mcg != cg:
                e = log.step("cgroup", path=str(mcg))
                mcg.mkdir()
                log.done(e)
            (mcg / ("memory.max" if cgroup_v2() else "memory.limit_in_bytes")).write_text(
                f"{sp.memory_limit}\n")
        for d in sp.disks:
            _up_disk(sp, d, log, cg)
    except BaseException:
        try:
            down(sp.prefix)
        except MpilabError:
            pass
        raise
    return log.st


def _up_disk(sp: DiskSpec, d: Disk, log: _Log, cg: Path) -> None:
    base = f"{sp.prefix}-{d.name}"
    mem = log.sd / f"{base}.mem"
    mnt = log.sd / base
    mem.mkdir()
    mnt.mkdir()
    # tmpfs with room for the image (throttle) or the files (seek) plus slack
    e = log.step("tmpfs", path=str(mem))
    _run(["mount", "-t", "tmpfs", "-o", f"size={d.size + 16 * 1024**2},mode=0755", base, str(mem)],
         f"disk {d.name}")
    log.done(e)
    info: dict[str, Any] = {"model": d.model, "mount": str(mnt)}
    if d.model == "throttle":
        img = mem / f"{base}.img"
        with open(img, "wb") as f:
            f.truncate(d.size)
        e = log.step("loop", backing=str(img))
        dev = _run(["losetup", "--find", "--show", str(img)], f"disk {d.name}").strip()
        log.done(e, dev=dev)
        _run(["mkfs.ext4", "-q", "-F", "-L", base, "-E", "lazy_itable_init=0,lazy_journal_init=0",
              dev], f"disk {d.name}")
        e = log.step("mount", path=str(mnt))
        _run(["mount", "-o", "noatime", dev, str(mnt)], f"disk {d.name}")
        log.done(e)
        devnum = _devnum(dev)
        _set_limits(cg, d, devnum)
        ra = Path("/sys/block") / Path(dev).name / "queue" / "read_ahead_kb"
        try:
            ra.write_text(f"{d.read_ahead_kb}\n")
        except OSError as ex:
            raise MpilabError(f"disk {d.name}: {ra}: {ex.strerror}") from None
        info.update(dev=dev, devnum=devnum)
    else:
        tool = find_tool("mpilab-seekfs")
        stats = log.sd / f"{base}.stats"
        e = log.step("fuse", path=str(mnt))
        cmd = [tool, "--backing", str(mem), "--size", str(d.size),
               "--seek-min", str(d.seek_min), "--seek-max", str(d.seek_max), "--rpm", str(d.rpm),
               "--rate", str(d.rate), "--stats", str(stats)]
        if d.elevator:
            cmd.append("--elevator")
        tdir = os.environ.get("MPILAB_DISK_TRACE_DIR")
        if tdir:  # diagnosis: every request the model serves, one line each
            cmd += ["--trace", str(Path(tdir).resolve() / f"{base}.trace")]
        cmd.append(str(mnt))
        _run(cmd, f"disk {d.name}")  # daemonizes once mounted
        deadline = time.monotonic() + 30
        while not mounted(mnt) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not mounted(mnt):
            raise MpilabError(f"disk {d.name}: mpilab-seekfs did not mount {mnt}")
        log.done(e)
        info.update(stats=str(stats))
    log.st["disks"][d.name] = info
    log.save()


def _loop_backing(dev: str) -> str | None:
    try:
        return (Path("/sys/block") / Path(dev).name / "loop" / "backing_file").read_text().strip()
    except OSError:
        return None


def _cgroup_pids(cg: Path) -> list[int]:
    try:
        return [int(x) for x in (cg / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def down(prefix: str) -> list[str]:
    """Remove what the state of `prefix` records, newest first. Returns what was removed."""
    st = load_state(prefix)
    sd = state_dir(prefix)
    if st is None:
        return []
    removed: list[str] = []
    problems: list[str] = []
    for e in reversed(st.get("made", [])):
        kind = e["kind"]
        try:
            if kind in ("mount", "tmpfs", "fuse"):
                p = Path(e["path"])
                if mounted(p):
                    if kind == "fuse" and shutil.which("fusermount3"):
                        subprocess.run(["fusermount3", "-u", "-z", str(p)], check=False,
                                       capture_output=True, timeout=60)
                    if mounted(p):
                        _run(["umount", "-l", str(p)], f"umount {p}")
                    removed.append(str(p))
            elif kind == "loop":
                # the recorded device, or (crash before it was recorded) any loop device
                # on our backing file, which lies in our state dir
                devs = [e["dev"]] if e.get("dev") else [
                    ln.split(":")[0] for ln in _run(["losetup", "-j", e["backing"]],
                                                    "losetup").splitlines() if ln]
                for dev in devs:
                    if _loop_backing(dev) == e["backing"]:
                        _run(["losetup", "-d", dev], f"losetup -d {dev}")
                        removed.append(dev)
            elif kind == "cgroup":
                cg = Path(e["path"])
                if cg.exists():
                    pids = _cgroup_pids(cg)
                    if pids:
                        problems.append(f"cgroup {cg} still holds processes {pids}")
                        continue
                    cg.rmdir()
                    removed.append(str(cg))
        except (MpilabError, OSError) as ex:
            problems.append(str(ex))
    if problems:
        raise MpilabError(f"disk down '{prefix}': " + "; ".join(problems))
    shutil.rmtree(sd, ignore_errors=True)
    return removed


def status(prefix: str) -> dict[str, Any]:
    st = load_state(prefix)
    if st is None:
        return {"prefix": prefix, "up": False}
    sp = DiskSpec.from_dict(st["spec"])
    cg = cgroup_dir(prefix)
    disks = []
    for d in sp.disks:
        info = dict(st.get("disks", {}).get(d.name, {}))
        info["name"] = d.name
        info["mounted"] = mounted(Path(info.get("mount", "/nonexistent")))
        if d.model == "throttle" and info.get("devnum") and not cgroup_v2():
            lim = {}
            for f in ("read_iops_device", "write_iops_device", "read_bps_device",
                      "write_bps_device"):
                try:
                    for ln in (cg / f"blkio.throttle.{f}").read_text().splitlines():
                        if ln.split()[0] == info["devnum"]:
                            lim[f] = int(ln.split()[1])
                except (OSError, IndexError, ValueError):
                    pass
            info["limits"] = lim
        disks.append(info)
    return {"prefix": prefix, "up": True, "cgroup": str(cg), "spec": st["spec"], "disks": disks,
            "pids": _cgroup_pids(cg)}


def throttle_counters(prefix: str, devnum: str) -> dict[str, float]:
    """The requests and bytes the disks' cgroup charged to device devnum so far (cgroup v1
    blkio.throttle.io_serviced / io_service_bytes; v2 io.stat): keys req_read, req_write,
    bytes_read, bytes_write (absent when the cgroup has not charged the device yet)."""
    out: dict[str, float] = {}
    cg = cgroup_dir(prefix)
    try:
        if cgroup_v2():
            for ln in (cg / "io.stat").read_text().splitlines():
                x = ln.split()
                if x and x[0] == devnum:
                    kv = dict(f.split("=", 1) for f in x[1:] if "=" in f)
                    for k, key in (("rios", "req_read"), ("wios", "req_write"),
                                   ("rbytes", "bytes_read"), ("wbytes", "bytes_write")):
                        if k in kv:
                            out[key] = float(kv[k])
            return out
        for f, key in (("io_serviced", "req"), ("io_service_bytes", "bytes")):
            for ln in (cg / f"blkio.throttle.{f}").read_text().splitlines():
                x = ln.split()
                if len(x) == 3 and x[0] == devnum and x[1] in ("Read", "Write"):
                    out[f"{key}_{x[1].lower()}"] = float(x[2])
    except (OSError, ValueError) as e:
        raise MpilabError(f"disks '{prefix}': cannot read the cgroup's I/O accounting: {e}"
                          ) from None
    return out


def join_cgroup(prefix: str) -> None:
    """Move the calling process into the disks' cgroup(s) (for preexec_fn)."""
    (cgroup_dir(prefix) / "cgroup.procs").write_text(f"{os.getpid()}\n")
    mcg = mem_cgroup_dir(prefix)
    if mcg != cgroup_dir(prefix) and mcg.is_dir():
        (mcg / "cgroup.procs").write_text(f"{os.getpid()}\n")


def run_in(prefix: str, cmd: list[str], timeout: float | None = None) -> int:
    if load_state(prefix) is None:
        raise MpilabError(f"disks '{prefix}' are not up")
    if not cmd:
        raise MpilabError("disk run: no command given (-- CMD ARGS)")
    try:
        p = subprocess.Popen(cmd, preexec_fn=lambda: join_cgroup(prefix),  # noqa: PLW1509
                             start_new_session=True)
    except (OSError, subprocess.SubprocessError) as e:
        raise MpilabError(f"{cmd[0]}: cannot run: {e}") from None
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        raise MpilabError(f"{cmd[0]}: killed after {timeout} s") from None
    except KeyboardInterrupt:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait()
        raise
