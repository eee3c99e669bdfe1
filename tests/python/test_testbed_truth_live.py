"""Whether the delay line holds the configured delay, on live testbeds (root): a one-site
testbed announces no WAN delay and starts no line; a busy-polling line is shown so and its
verdict recorded; `up --require-delay` beside busy loops holds the delay or refuses. Each
test brings up a testbed of its own under a prefix holding the process id, and accepts
whichever verdict the load allows: no time is judged beyond a lower bound of the delay."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import livetb
import pytest
from mpilab.commands import selftest
from mpilab.testbed import net


@pytest.mark.root
@pytest.mark.skipif(not livetb.have_netns(), reason="needs root and ip netns")
def test_one_site_announces_no_wan_delay_and_starts_no_line(tmp_path: Path) -> None:
    prefix = f"{livetb.LETTER}o{os.getpid() % 10000}"
    spec = ("[cluster]\nsites = 1\nnodes_per_site = 2\n[wan]\ndelay = \"5ms\"\n"
            "delay_backend = \"delayline\"\n")
    for env in livetb.live_testbed(tmp_path, prefix, spec, 300):
        st = net.load_state(prefix)
        assert st is not None and st["delay_backend"] == "none"
        assert st["delayline_pid"] is None and "delay_truth" not in st
        router = net.current_spec(prefix).router_ns()
        assert net.ns_pids(router) == []  # no delay line (nor anything else) in the router
        p = livetb.mpilab("testbed", "status", env=env)
        assert p.returncode == 0, p.stderr
        assert "delay: none (one site: no WAN)" in p.stdout
        assert "L 5 ms" not in p.stdout and "delay line" not in p.stdout
        # up again: the same testbed, announced without a WAN delay
        f = tmp_path / "again.toml"
        f.write_text(spec.replace("delay_backend", "delay_io = \"packet\"\ndelay_backend"))
        p = livetb.mpilab("testbed", "up", str(f), env=env, timeout=300)
        assert p.returncode == 0, p.stderr
        assert "WAN delay" not in p.stdout and "one site: no WAN, no delay line" in p.stdout
        assert "trim" not in p.stderr


@pytest.mark.root
@pytest.mark.skipif(not livetb.have_netns(), reason="needs root and ip netns")
def test_a_busy_polling_line_is_shown_so_and_judged(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A 50 us WAN: the line busy-polls (below 100 us); its trim is measured at up and the
    verdict recorded; status says busy-polling, never "normal scheduling", and the verdict;
    a line judged not to hold its delay was warned about on stderr. Then the selftest's
    lone packets across it (a behaviour check: whichever verdict the load allows)."""
    prefix = f"{livetb.LETTER}b{os.getpid() % 10000}"
    spec = ("[cluster]\nsites = 2\nnodes_per_site = 1\n[wan]\ndelay = \"50us\"\n"
            "delay_backend = \"delayline\"\n")
    f = tmp_path / "spec.toml"
    f.write_text(spec)
    env = dict(os.environ, MPILAB_TESTBED_STATE_ROOT=str(tmp_path), MPILAB_TESTBED_PREFIX=prefix)
    env["PYTHONPATH"] = str(livetb.REPO / "python") + os.pathsep + env.get("PYTHONPATH", "")
    monkeypatch.setenv("MPILAB_TESTBED_STATE_ROOT", str(tmp_path))
    try:
        up = livetb.mpilab("testbed", "up", str(f), env=env, timeout=600)
        assert up.returncode == 0, up.stderr
        assert "measuring the delay line's trim" in up.stderr and "; took " in up.stdout
        st = net.load_state(prefix)
        assert st is not None and st["delay_trim"]["measured"] is True
        truth = st["delay_truth"]
        assert truth["held"] in (True, False)
        assert truth["tolerance_s"] == pytest.approx(10e-6)
        assert ("WARNING" in up.stderr) == (truth["held"] is False), up.stderr
        # up again with the same spec: the running testbed is kept, nothing measured again
        again = livetb.mpilab("testbed", "up", str(f), env=env, timeout=600)
        assert again.returncode == 0 and "already up" in again.stdout, again.stderr
        # (a delay not held at up is said again: the state keeps the verdict)
        assert all("WARNING" in ln for ln in again.stderr.splitlines()), again.stderr
        assert net.load_state(prefix) == st
        p = livetb.mpilab("testbed", "status", env=env)
        assert p.returncode == 0, p.stderr
        assert "busy-polling (spins a CPU" in p.stdout, p.stdout
        assert "normal scheduling" not in p.stdout
        assert ("held at up" if truth["held"] else "NOT HELD at up") in p.stdout
        js = json.loads(livetb.mpilab("testbed", "status", "--json", env=env).stdout)
        assert js["delayline"]["busy_poll"] is True and js["delay"]["truth"] == truth
        got = selftest.lone_oneway(prefix, 50e-6, count=5)
        # five lone datagrams each way after the warm-up, each about the delay late or more
        assert len(got[0]) == len(got[1]) == 5 and min(got[0] + got[1]) >= 50e-6 - 10e-6
    finally:
        livetb.mpilab("testbed", "down", env=env, timeout=300)
        assert net.list_namespaces(prefix) == []


@pytest.mark.root
@pytest.mark.skipif(not livetb.have_netns(), reason="needs root and ip netns")
def test_up_beside_busy_cpus_holds_its_delay_or_refuses(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`up --require-delay` of a 10 us WAN beside two busy loops: either the line holds the
    delay (exit 0, the verdict held in the state, no warning) or `up` refuses in one line
    naming the configured delay (exit 1, the testbed taken down), whichever the load
    allows (exit 2 when no calibration attempt's probes came back); never exit 0 with a line
    that does not hold it, never a traceback."""
    prefix = f"{livetb.LETTER}h{os.getpid() % 10000}"
    f = tmp_path / "spec.toml"
    f.write_text("[cluster]\nsites = 2\nnodes_per_site = 1\n[wan]\ndelay = \"10us\"\n"
                 "delay_backend = \"delayline\"\n")
    env = dict(os.environ, MPILAB_TESTBED_STATE_ROOT=str(tmp_path), MPILAB_TESTBED_PREFIX=prefix)
    env["PYTHONPATH"] = str(livetb.REPO / "python") + os.pathsep + env.get("PYTHONPATH", "")
    monkeypatch.setenv("MPILAB_TESTBED_STATE_ROOT", str(tmp_path))
    hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
    try:
        up = livetb.mpilab("testbed", "up", "--require-delay", str(f), env=env, timeout=240)
        for h in hogs:
            h.kill()
            h.wait()
        said = [ln for ln in up.stderr.splitlines()
                if not ln.startswith("mpilab: testbed up: measuring the delay line's trim")]
        assert "Traceback" not in up.stderr and "internal error" not in up.stderr, up.stderr
        if up.returncode == 0:
            st = net.load_state(prefix)
            assert st is not None and st["delay_truth"]["held"] is True, st
            assert said == [], up.stderr
        else:
            assert up.returncode in (1, 2) and len(said) == 1, up.stderr
            assert "10 us" in said[0], said
            assert net.list_namespaces(prefix) == []
    finally:
        for h in hogs:
            if h.poll() is None:
                h.kill()
                h.wait()
        livetb.mpilab("testbed", "down", env=env, timeout=300)
        assert net.list_namespaces(prefix) == []
