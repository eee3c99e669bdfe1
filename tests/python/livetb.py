"""Helpers of the live testbed tests (root, network namespaces): what the machine offers,
and the module-scoped pathmig testbed that test_pathmig.py and test_pathmig_tail.py share
(each test file keeps its own prefix and state folder)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from mpilab.pathmig import agents
from mpilab.testbed import faults, net
from mpilab.testbed.spec import Spec
from mpilab.tools import find_tool

REPO = Path(__file__).resolve().parents[2]
# testbed prefixes: the first letter of $MPILAB_TESTBED_PREFIX (a developer's own letter on
# a shared machine), else q; then the test file's letter and the pid
LETTER = (os.environ.get("MPILAB_TESTBED_PREFIX") or "q")[0]


def have_netns(*commands: str) -> bool:
    """Root, a working `ip netns`, and every one of commands on PATH."""
    if os.geteuid() != 0 or any(shutil.which(c) is None for c in ("ip", *commands)):
        return False
    return subprocess.run(["ip", "netns", "list"], capture_output=True).returncode == 0


def have_tools(*names: str) -> bool:
    """Every C tool named is built (mpilab.tools.find_tool finds it)."""
    try:
        for n in names:
            find_tool(n)
        return True
    except Exception:
        return False


def mpilab(*args: str, env: dict[str, str], timeout: float = 300,
           **kw: object) -> subprocess.CompletedProcess[str]:
    """`mpilab ARGS` from this checkout, in env, output captured."""
    return subprocess.run([sys.executable, "-m", "mpilab.cli", *args], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=timeout, **kw)  # type: ignore


def fixed_trim(spec_text: str) -> str:
    """spec_text with wan.delay_trim = "0us" (at the top of its [wan] table; unchanged
    without one): `up` then does not measure the delay line's trim, 10-50 s of lone packets
    across the WAN, for tests that do not depend on a few microseconds of the WAN's delay.
    The measurement itself is tested where it is the behaviour under test
    (test_testbed_delayline.py, test_testbed_truth_live.py and test_testbed.py's module
    testbed)."""
    lines = spec_text.splitlines(keepends=True)
    for k, line in enumerate(lines):
        if line.strip() == "[wan]":
            return "".join(lines[:k + 1] + ['delay_trim = "0us"\n'] + lines[k + 1:])
    return spec_text


def live_testbed(root: Path, prefix: str, spec_text: str, timeout: float = 300
                 ) -> Iterator[dict[str, str]]:
    """A testbed from spec_text with its state under root and the given prefix, for a
    module-scoped fixture to yield from: the environment of its commands; the testbed taken
    down afterwards and MPILAB_TESTBED_STATE_ROOT restored."""
    env = dict(os.environ, MPILAB_TESTBED_STATE_ROOT=str(root), MPILAB_TESTBED_PREFIX=prefix)
    env["PYTHONPATH"] = str(REPO / "python") + os.pathsep + env.get("PYTHONPATH", "")
    f = root / "spec.toml"
    f.write_text(spec_text)
    old = os.environ.get("MPILAB_TESTBED_STATE_ROOT")
    os.environ["MPILAB_TESTBED_STATE_ROOT"] = str(root)
    p = mpilab("testbed", "up", str(f), env=env, timeout=timeout)
    assert p.returncode == 0, p.stderr
    try:
        yield env
    finally:
        mpilab("testbed", "down", env=env, timeout=timeout)
        if old is None:
            os.environ.pop("MPILAB_TESTBED_STATE_ROOT", None)
        else:
            os.environ["MPILAB_TESTBED_STATE_ROOT"] = old


def pathmig_testbed(root: Path, tag: str, spec_text: str
                    ) -> Iterator[tuple[Spec, dict[str, str]]]:
    """live_testbed of fixed_trim(spec_text) (no test of path migration depends on the
    trim) with prefix LETTER + tag + pid, yielding (spec, environment); the agents stopped
    before it goes down."""
    prefix = f"{LETTER}{tag}{os.getpid() % 10000}"
    for env in live_testbed(root, prefix, fixed_trim(spec_text)):
        try:
            yield net.current_spec(prefix), env
        finally:
            agents.stop(net.current_spec(prefix))


def fresh_state(sp: Spec) -> Iterator[None]:
    """No agent, no fault, empty logs before and after a test (for a fixture to yield
    from)."""
    agents.stop(sp)
    faults.heal(sp, None)
    agents.clear_logs(sp)
    try:
        yield
    finally:
        agents.stop(sp)
        faults.heal(sp, None)
