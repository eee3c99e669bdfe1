"""The emulated disks' state file (PREFIX-disk/state.json) is checked against
schemas/disk-state-1.schema.json and bounded to the prefix's own things before any disk
command acts on it: a damaged or foreign state never makes `disk down` unmount, detach or
remove something else, nor `disk check` write elsewhere; each problem is one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import cli_env
from mpilab.disk import dev
from mpilab.disk import spec as dspec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "disk"
PREFIX = "qs"


def _state_as_up_writes(sp: dspec.DiskSpec, sd: Path) -> dict[str, Any]:
    """The state `up` leaves for spec `sp` (dev._up_disk's steps, every one done)."""
    p = sp.prefix
    made: list[dict[str, Any]] = [{"kind": "cgroup", "pending": False,
                                   "path": str(dev.cgroup_dir(p))}]
    if sp.memory_limit and dev.mem_cgroup_dir(p) != dev.cgroup_dir(p):
        made.append({"kind": "cgroup", "pending": False, "path": str(dev.mem_cgroup_dir(p))})
    disks: dict[str, Any] = {}
    for k, d in enumerate(sp.disks):
        base = sd / f"{p}-{d.name}"
        made.append({"kind": "tmpfs", "pending": False, "path": f"{base}.mem"})
        if d.model == "throttle":
            made.append({"kind": "loop", "pending": False, "backing":
                         f"{base}.mem/{p}-{d.name}.img", "dev": f"/dev/loop{k}"})
            made.append({"kind": "mount", "pending": False, "path": str(base)})
            disks[d.name] = {"model": d.model, "mount": str(base), "dev": f"/dev/loop{k}",
                             "devnum": f"7:{k}"}
        else:
            made.append({"kind": "fuse", "pending": False, "path": str(base)})
            disks[d.name] = {"model": d.model, "mount": str(base),
                             "stats": f"{base}.stats"}
    return {"spec": sp.to_dict(), "made": made, "disks": disks}


def _put(root: Path, doc: object) -> Path:
    sd = root / f"{PREFIX}-disk"
    sd.mkdir(parents=True, exist_ok=True)
    text = doc if isinstance(doc, str) else json.dumps(doc)
    (sd / "state.json").write_text(text)
    return sd / "state.json"


def test_every_example_spec_makes_a_state_the_loader_accepts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MPILAB_DISK_STATE_ROOT", str(tmp_path))
    files = sorted(EXAMPLES.glob("*.toml"))
    assert len(files) > 3
    for f in files:
        sp = dspec.load(str(f), PREFIX)
        st = _state_as_up_writes(sp, dev.state_dir(PREFIX))
        _put(tmp_path, st)
        assert dev.load_state(PREFIX) == st, f


def _good(root: Path) -> dict[str, Any]:
    """A throttled disk `a` (examples/disk/hdd.toml) as up leaves it, made by the kinds
    cgroup(s), tmpfs, loop, mount."""
    sp = dspec.load(str(EXAMPLES / "hdd.toml"), PREFIX)
    return _state_as_up_writes(sp, root / f"{PREFIX}-disk")


def _set(path: str, value: object) -> Any:
    """Set a field; `made.KIND` is the first entry of that kind."""
    def f(doc: dict[str, Any], victim: Path) -> None:
        keys = path.split(".")
        at: Any = doc
        for k in keys[:-1]:
            if isinstance(at, list) and not k.isdigit():
                at = next(e for e in at if e["kind"] == k)
                continue
            at = at[int(k)] if isinstance(at, list) else at[k]
        at[int(keys[-1]) if isinstance(at, list) else keys[-1]] = (
            value.replace("VICTIM", str(victim)) if isinstance(value, str) else value)
    return f


CASES = [
    ("no spec", lambda d, v: d.pop("spec"), ":1: spec: missing"),
    ("an entry without kind", _set("made.0", {"pending": False}), ":1: made[0]"),
    ("spec a number", _set("spec", 7), ":1: spec: expected an object"),
    ("another prefix's spec", _set("spec.prefix", "qt"),
     ": spec.prefix is 'qt', not these disks' 'qs'; not acting on other disks"),
    ("a cgroup elsewhere", _set("made.0.path", "VICTIM"),
     ": made[0].path: '{V}' is not one of this prefix's cgroups; not acting on it"),
    ("a mount elsewhere", _set("made.mount.path", "VICTIM"),
     "].path: '{V}' is not one of this prefix's disks; not acting on it"),
    ("a tmpfs of another prefix", _set("made.tmpfs.path", "ROOT/qt-disk/qt-a.mem"),
     "is not one of this prefix's disks"),
    ("a mount path with ..", _set("made.mount.path", "ROOT/qs-disk/qs-a/../../x"),
     "is not one of this prefix's disks"),
    ("a loop backing elsewhere", _set("made.loop.backing", "VICTIM/keep"),
     "].backing: '{V}/keep' is not one of this prefix's disks"),
    ("a probe mount elsewhere", _set("disks.a.mount", "VICTIM"),
     ": disks.a.mount: '{V}' is not in this prefix's state folder; not acting on it"),
    ("an unknown kind", _set("made.tmpfs.kind", "rm"), "].kind: "),
    ("a loop device that is not one", _set("made.loop.dev", "/dev/sda"), "].dev: "),
    ("a made disk without its loop step",
     lambda d, v: d.update(made=[e for e in d["made"] if e["kind"] != "loop"]),
     ": made: no loop entry for disk a (down would leave it)"),
    ("a made disk the spec does not have", _set("spec.disks.0.name", "b"),
     ": disks.a: not a throttle disk of the spec"),
    ("a spec disk without its fields", lambda d, v: d["spec"]["disks"][0].pop("rpm"),
     ".rpm: missing"),
    ("deep nesting", "DEEP", ": malformed JSON: nested too deeply"),
]


@pytest.mark.parametrize("name, mutate, why", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("cmd", [["disk", "down"], ["disk", "status"],
                                 ["disk", "check", "--seconds", "1"],
                                 ["disk", "run", "--", "true"]])
def test_damaged_disk_state_is_one_line_and_touches_nothing(
        tmp_path: Path, name: str, mutate: Any, why: str, cmd: list[str]) -> None:
    root = tmp_path / "root"
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("k")
    if mutate == "DEEP":
        doc: object = '{"spec": ' + "[" * 100000 + "]" * 100000 + "}"
    else:
        good = _good(root)
        mutate(good, victim)
        doc = json.loads(json.dumps(good).replace("ROOT", str(root)))
    path = _put(root, doc)
    env = dict(cli_env(), MPILAB_DISK_STATE_ROOT=str(root), MPILAB_DISK_PREFIX=PREFIX)
    r = subprocess.run([sys.executable, "-m", "mpilab.cli", *cmd], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"mpilab: {path}" in r.stderr, r.stderr
    assert why.replace("{V}", str(victim)) in r.stderr, r.stderr
    assert (victim / "keep").read_text() == "k" and path.exists()


def test_status_of_an_interrupted_up_names_the_disk_not_made(tmp_path: Path) -> None:
    """A spec disk with no record (up was interrupted before it) is shown as not made."""
    doc = _good(tmp_path)
    doc["disks"] = {}
    _put(tmp_path, doc)
    env = dict(cli_env(), MPILAB_DISK_STATE_ROOT=str(tmp_path), MPILAB_DISK_PREFIX=PREFIX)
    r = subprocess.run([sys.executable, "-m", "mpilab.cli", "disk", "status"], env=env,
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "  a: not made (an interrupted `up`" in r.stdout, r.stdout
