"""Holes closed after the independent campaign: an interrupted `wavefront create` leaves
nothing behind, `mpilab-delayline` usage errors exit 2 in one line, and testbed, multilane
and pathmig arguments are refused before any testbed is looked at."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import cli_env, make_results

MPILAB = [sys.executable, "-m", "mpilab.cli"]


def _cli(*args: str, cwd: Path, timeout: float = 120,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(MPILAB + list(args), cwd=cwd, env=env or cli_env(),
                          capture_output=True, text=True, timeout=timeout)


def _tool(name: str) -> str:
    from mpilab.tools import find_tool

    try:
        return find_tool(name)
    except Exception:
        pytest.skip(f"{name} not built")


# ------------------------------------------------------------ interrupted wavefront create

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("via", ["mpilab", "tool"])
def test_interrupted_wavefront_create_leaves_nothing(tmp_path: Path, sig: signal.Signals,
                                                     via: str) -> None:
    """The signal is sent as soon as the tool's temporary output appears: the run either
    finished first (both outputs complete) or left no file at all."""
    argv = ["create", "--rows", "2500", "--cols", "2500", "d", "c"]
    cmd = (MPILAB + ["wavefront"] + argv) if via == "mpilab" else [_tool("mpilab-wavefront")] + argv
    p = subprocess.Popen(cmd, cwd=tmp_path, env=cli_env(), stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while p.poll() is None and time.monotonic() < deadline:
            if any(".tmp." in n for n in os.listdir(tmp_path)):
                break
            time.sleep(0.005)
        p.send_signal(sig)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    left = sorted(os.listdir(tmp_path))
    if p.returncode == 0:
        assert left == ["c", "d"], left
        assert (tmp_path / "d").stat().st_size == 4096 + 2500 * 2500 * 8
    else:
        assert left == [], (p.returncode, left, err)
        assert p.returncode in (-sig, 128 + sig, 130), (p.returncode, err)
        assert b"Traceback" not in err


# ------------------------------------------------------------ mpilab-delayline usage errors

@pytest.mark.parametrize("args,names", [
    (["--dev", "nosuchtun0"], "--dev nosuchtun0: no such device"),
    (["--dev", ""], "--dev : an empty name"),
    (["--dev", "x" * 20], "name too long"),
    (["--dev", "a/b"], "not an interface name"),
    (["--dev", "lo", "--trim-file", ""], "--trim-file : an empty name"),
    (["--dev", "lo", "--trim-file", "/nonexistent-dir/t"], "its folder does not exist"),
    (["--dev", "lo", "--trim-file", "/"], "a directory"),
    (["--dev", "nosuchtun0", "--delay", "bogus"], "--delay bogus"),
])
def test_delayline_usage_errors_exit_2_in_one_line(tmp_path: Path, args: list[str],
                                                   names: str) -> None:
    argv = [_tool("mpilab-delayline"), *args]
    if "--delay" not in args:
        argv += ["--delay", "5ms"]
    r = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.count("\n") == 1 and names in r.stderr, r.stderr
    assert os.listdir(tmp_path) == []


# ------------------------------------------------ arguments before the testbed is looked at

@pytest.mark.parametrize("argv,names", [
    (["testbed", "run", "--hosts", "", "--", "true"], "--hosts"),
    (["testbed", "run", "--hosts", ",", "--", "true"], "--hosts"),
    (["testbed", "run", "--hosts", "s0n0,s0n0", "--", "true"], "named twice"),
    (["testbed", "run", "--hosts", "node1", "--", "true"], "not a node name"),
    (["testbed", "run", "--rails", "", "--", "true"], "--rails"),
    (["testbed", "run", "--rails", "-1", "--", "true"], "--rails"),
    (["testbed", "run", "--rails", "0,0", "--", "true"], "named twice"),
    (["testbed", "fail", "bogus"], "NODE:RAIL"),
    (["testbed", "fail", "s0n0:x"], "NODE:RAIL"),
    (["testbed", "heal", "n0:0"], "NODE:RAIL"),
    (["multilane", "run", "--testbed", "zz", "--sizes", "0"], "--sizes"),
    (["multilane", "run", "--testbed", "zz", "--sizes", "0:4K:1K"], "--sizes"),
    (["pathmig", "start", "--hosts", ""], "--hosts"),
    (["pathmig", "status", "--node", "s0n0,s1n0"], "--node"),
    (["pathmig", "arm", "all;stop"], "TOKEN|all"),
    (["pathmig", "migrate", "--node", "x", "all"], "--node"),
])
def test_arguments_refused_before_the_testbed(tmp_path: Path, argv: list[str],
                                              names: str) -> None:
    """No testbed is up: an argument checked only after the testbed is looked at would be
    reported as "testbed ... is not up"; refused first, the one line names the argument."""
    env = cli_env()
    env["MPILAB_TESTBED_STATE_ROOT"] = str(tmp_path / "state")
    if argv[0] != "multilane":
        argv = [argv[0], argv[1], "--prefix", "zz", *argv[2:]]
    r = _cli(*argv, cwd=tmp_path, env=env, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.count("\n") == 1 and names in r.stderr, r.stderr
    assert "is not up" not in r.stderr
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize("cmd", [["pathmig", "start"], ["pathmig", "status"],
                                 ["testbed", "status"]])
def test_empty_prefix_is_refused_not_defaulted(tmp_path: Path, cmd: list[str]) -> None:
    env = cli_env()
    env["MPILAB_TESTBED_STATE_ROOT"] = str(tmp_path / "state")
    r = _cli(*cmd, "--prefix", "", cwd=tmp_path, env=env, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.count("\n") == 1 and "prefix ''" in r.stderr, r.stderr


def test_report_to_a_fifo_without_reader_leaves_no_runtime_file(
        tmp_path: Path, write_json: Any) -> None:
    """A page streamed to a FIFO (or a device) is self-contained: a refused FIFO leaves no
    plotting runtime file beside it."""
    res = write_json(make_results(ranks=2, sizes=(0, 1024)), "r.json")
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "afifo")
    r = _cli("report", str(res), "-o", "afifo", cwd=out)
    assert r.returncode == 2 and "no reader" in r.stderr, (r.returncode, r.stderr)
    assert r.stderr.count("\n") == 1
    assert os.listdir(out) == ["afifo"]
