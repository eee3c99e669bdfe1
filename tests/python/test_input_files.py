"""Input files of the newer entry points read like results files (issue 11): only regular
files (a FIFO would block, /dev/zero never end), strict numbers (no Unicode digits, no
blanks, no NaN or Infinity), one line naming the file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mpilab.disk import spec as diskspec
from mpilab.errors import MpilabError
from mpilab.multilane import doc as mldoc

DISK = '[[disk]]\nname = "a"\n'


def test_disk_spec_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    f = tmp_path / "d.toml"
    os.mkfifo(f)
    with pytest.raises(MpilabError, match=r"d\.toml: is a FIFO, expected a disk spec"):
        diskspec.load(str(f))


def test_disk_spec_device_is_refused() -> None:
    with pytest.raises(MpilabError, match="/dev/zero: is a device"):
        diskspec.load("/dev/zero")


@pytest.mark.parametrize("line", ['size = "\u0663G"', 'size = " 1G"', 'size = "1G "',
                                  'read_bw = "\u0663MB"', 'read_bw = " 150MB"',
                                  'seek_min = "\u0663ms"'])
def test_disk_spec_numbers_are_strict(tmp_path: Path, line: str) -> None:
    f = tmp_path / "d.toml"
    f.write_text(DISK + line + "\n")
    with pytest.raises(MpilabError, match=r"d\.toml:3: disk\.") as e:
        diskspec.load(str(f))
    assert "\n" not in str(e.value)


def test_disk_spec_plain_numbers_still_parse(tmp_path: Path) -> None:
    f = tmp_path / "d.toml"
    f.write_text(DISK + 'size = "512M"\nread_bw = "150MB/s"\n')
    sp = diskspec.load(str(f))
    assert sp.disks[0].size == 512 << 20 and sp.disks[0].read_bw == 150_000_000


def _ml(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "m.json"
    p.write_text(text)
    return p


ML = {"schema": "mpilab.multilane/1", "runs": [
    {"op": "scatter", "impl": "single", "lanes": None, "bytes": 1024, "times": [1e-3]}]}


def test_multilane_document_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "m.json"
    os.mkfifo(f)
    with pytest.raises(MpilabError, match="is a FIFO, expected a multilane document"):
        mldoc.load(f)


@pytest.mark.parametrize("text, words", [
    ('"wall_start": Infinity', "Infinity is not a JSON number"),
    ('"wall_end": 1e999', "1e999 is outside the range of a double"),
    ('"bytes": ' + "9" * 5000, "(5000 characters) is outside the range"),
])
def test_multilane_document_numbers_are_rfc_8259(tmp_path: Path, text: str,
                                                  words: str) -> None:
    doc = json.dumps(ML).replace('"bytes": 1024', '"bytes": 1024, ' + text)
    if text.startswith('"bytes"'):
        doc = json.dumps(ML).replace('"bytes": 1024', text)
    with pytest.raises(MpilabError, match=r"m\.json:1: runs\[0\]\.") as e:
        mldoc.load(_ml(tmp_path, doc))
    assert words in str(e.value) and "\n" not in str(e.value)


def test_multilane_good_document_loads(tmp_path: Path) -> None:
    d = mldoc.load(_ml(tmp_path, json.dumps(ML)))
    assert len(d.runs) == 1 and d.runs[0].bytes == 1024


def test_local_rank_count_beyond_the_machine_is_refused_before_starting() -> None:
    """`mpilab bench --np 100000` and `mpilab selftest --np 100000` started mpirun, which
    forked until memory ran out (the testbed's run was already checked)."""
    from mpilab import launch

    lr = launch.Launcher("mpirun", "/usr/bin/mpirun", "openmpi")
    with pytest.raises(MpilabError, match=r"--np 10000000: this machine can start at most "):
        lr.check_np(10**7)
    lr.check_np(2)  # a sane count passes
    # ranks on other hosts: this machine's limit does not apply
    launch.Launcher("mpirun", "/usr/bin/mpirun", "openmpi", ["--hostfile", "h"]).check_np(10**7)


def test_wavefront_output_onto_a_fifo_is_refused_and_kept(tmp_path: Path) -> None:
    import stat
    import subprocess

    from mpilab.tools import find_tool

    os.mkfifo(tmp_path / "d")
    p = subprocess.run([find_tool("mpilab-wavefront"), "create", "--rows", "64", "--cols",
                        "64", "d", "c"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode != 0
    assert p.stderr.count("\n") == 1 and "d: is not a regular file" in p.stderr, p.stderr
    assert stat.S_ISFIFO(os.lstat(tmp_path / "d").st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="a private network namespace needs root")
@pytest.mark.parametrize("which", ["--peers", "--alt"])
def test_pathmig_agent_refuses_a_fifo_without_blocking(tmp_path: Path, which: str) -> None:
    import subprocess

    from mpilab.tools import find_tool

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "peers").write_text("n0 10.0.0.1\nn1 10.0.0.2\n")
    args = ["--peers", "fifo"] if which == "--peers" else ["--peers", "peers", "--alt", "fifo"]
    p = subprocess.run(["unshare", "-n", find_tool("mpilab-pathmigd"), "--node", "n0", *args,
                        "--no-realtime"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "fifo: not a regular file" in p.stderr, p.stderr


@pytest.mark.parametrize("which", ["--log", "--control", "--pidfile", "--node"])
def test_pathmig_agent_refuses_an_empty_name_before_reading_its_peers(tmp_path: Path,
                                                                      which: str) -> None:
    """An empty name is an argument error, named before the (missing) peers file is read."""
    import subprocess

    from mpilab.tools import find_tool

    args = ["--node", "n0", "--peers", "nosuch.peers", which, ""]
    p = subprocess.run([find_tool("mpilab-pathmigd"), *args, "--no-realtime"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2
    assert p.stderr == f"mpilab-pathmigd: {which}: an empty value\n", p.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("prefix", ["", "rb\n", "RB"])
def test_disk_prefix_is_checked_and_never_falls_back_to_the_default(prefix: str) -> None:
    import argparse

    from mpilab.disk import cli as diskcli

    with pytest.raises(MpilabError, match="--prefix .*must be 1-6 characters"):
        diskcli._prefix(argparse.Namespace(prefix=prefix))
