"""Logs the C daemons and tools stream (mpilab-pm-pingpong --rtt-log, mpilab-pathmigd --log,
mpilab-seekfs --trace): a FIFO with no reader is refused in one line (each used to block in
open() for ever; the ping-pong now checks before any connection, seekfs before mounting); a
FIFO with a reader receives the stream; a directory is one line. Loopback, no testbed."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from mpilab.errors import MpilabError
from mpilab.tools import REPO, find_tool

sys.path.insert(0, str(REPO / "bench"))
import harness  # noqa: E402


def _tool() -> str:
    try:
        return find_tool("mpilab-pm-pingpong")
    except MpilabError:
        pytest.skip("mpilab-pm-pingpong not built")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_fifo_without_reader_is_refused_before_connecting(tmp_path: Path) -> None:
    fifo = tmp_path / "rtt.fifo"
    os.mkfifo(fifo)
    # nothing listens on the port: the log is checked first, so its error is the one shown
    p = subprocess.run([_tool(), "--connect", f"127.0.0.1:{_free_port()}", "--tcp", "--iters",
                        "3", "--rtt-log", str(fifo)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        f"mpilab-pm-pingpong: --rtt-log {fifo}: a FIFO with no reader; not waiting for one"]
    p = subprocess.run([_tool(), "--connect", f"127.0.0.1:{_free_port()}", "--tcp",
                        "--rtt-log", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    assert "Is a directory" in p.stderr


def test_no_connection_leaves_no_log_it_created(tmp_path: Path) -> None:
    """A refused connection ends before the first round trip: the log file this run created
    is gone; a log that was there before is left in place."""
    log = tmp_path / "rtt.log"
    p = subprocess.run([_tool(), "--connect", f"127.0.0.1:{_free_port()}", "--tcp", "--iters",
                        "1", "--rtt-log", str(log)], capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not log.exists()
    log.write_text("")
    p = subprocess.run([_tool(), "--connect", f"127.0.0.1:{_free_port()}", "--tcp", "--iters",
                        "1", "--rtt-log", str(log)], capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and log.exists()


def test_fifo_with_reader_gets_every_round_trip(tmp_path: Path) -> None:
    fifo = tmp_path / "rtt.fifo"
    os.mkfifo(fifo)
    got: list[str] = []

    def read() -> None:
        with open(fifo, encoding="ascii") as f:  # blocks until the writer opens it
            got.extend(f.read().splitlines())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    port = _free_port()
    server = subprocess.Popen([_tool(), "--listen", f"127.0.0.1:{port}", "--tcp", "--iters",
                               "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        assert server.stdout.readline().startswith("listening")
        # the reader thread may not have opened its end yet: the client is refused then
        for _ in range(100):
            c = subprocess.run([_tool(), "--connect", f"127.0.0.1:{port}", "--tcp", "--iters",
                                "5", "--rtt-log", str(fifo)], capture_output=True, text=True,
                               timeout=60)
            if "no reader" not in c.stderr:
                break
        assert c.returncode == 0, c.stderr
        reader.join(timeout=60)
        assert [line.split()[0] for line in got] == ["0", "1", "2", "3", "4"]
    finally:
        server.kill()
        server.wait()


def _agent(tmp_path: Path) -> tuple[str, Path]:
    """The agent and a peers file naming this host with two rails (skips without them)."""
    try:
        agent = find_tool("mpilab-pathmigd")
    except MpilabError:
        pytest.skip("mpilab-pathmigd not built")
    addr = harness.second_address()
    if addr is None:
        pytest.skip("no second IPv4 address here for the agent's second rail")
    peers = tmp_path / "peers"
    peers.write_text(f"n0 127.0.0.1 {addr}\n")
    return agent, peers


def test_agent_log_fifo_without_reader_is_refused(tmp_path: Path) -> None:
    agent, peers = _agent(tmp_path)
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    p = subprocess.run([agent, "--node", "n0", "--peers", str(peers), "--log", str(fifo),
                        "--no-realtime", "--port", str(_free_port())],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert p.stderr.strip().splitlines() == [
        f"mpilab-pathmigd: --log {fifo}: a FIFO with no reader; not waiting for one"]


def test_seekfs_trace_fifo_without_reader_is_refused_before_mounting(tmp_path: Path) -> None:
    try:
        seekfs = find_tool("mpilab-seekfs")
    except MpilabError:
        pytest.skip("mpilab-seekfs not built (no libfuse3)")
    (tmp_path / "b").mkdir()
    (tmp_path / "m").mkdir()
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    p = subprocess.run([seekfs, "--backing", str(tmp_path / "b"), "--size", "1048576",
                        "--trace", str(fifo), "--foreground", str(tmp_path / "m")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        f"mpilab-seekfs: --trace {fifo}: a FIFO with no reader; not waiting for one"]
    assert not os.path.ismount(tmp_path / "m")


def test_agent_logs_a_wake_up_it_slept_through(tmp_path: Path) -> None:
    """An agent that was not running (stopped here; on a busy machine, starved) logs the
    wake-up it missed as a `late` event, at least as late as it was kept from running less
    one loop period, with the monotonic time it was due."""
    agent, peers = _agent(tmp_path)
    log = tmp_path / "events.jsonl"
    p = subprocess.Popen([agent, "--node", "n0", "--peers", str(peers), "--log", str(log),
                          "--no-realtime", "--port", str(_free_port())],
                         stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while '"start"' not in (log.read_text() if log.exists() else ""):
            assert p.poll() is None and time.monotonic() < deadline, p.stderr
            time.sleep(0.05)
        stopped = time.monotonic()
        p.send_signal(signal.SIGSTOP)
        time.sleep(0.4)
        p.send_signal(signal.SIGCONT)
        while '"late"' not in log.read_text():
            assert p.poll() is None and time.monotonic() < deadline, p.stderr
            time.sleep(0.05)
    finally:
        p.terminate()
        p.wait(timeout=60)
    late = [e for e in map(json.loads, log.read_text().splitlines()) if e["event"] == "late"]
    worst = max(late, key=lambda e: e["late_ms"])
    # the loop wakes at least every 50 ms (its state machines' tick): 400 ms stopped leaves
    # a wake-up at least 350 ms late, due after the stop began, logged when it came
    assert worst["late_ms"] >= 300 and worst["due"] >= stopped - 0.1, late
    assert worst["monotonic"] >= worst["due"] + worst["late_ms"] / 1e3 - 1e-6, late
