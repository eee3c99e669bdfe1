"""scripts/test (what `make test` runs) runs every part even when one fails, prints one
line per part at the end and exits non-zero if any failed: the real script, run in a
scratch tree whose install, build, ctest and python are stubs that log their calls."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PARTS = ["install and build", "C and MPI tests (Open MPI)",
         "C and MPI tests under AddressSanitizer+UBSan", "C and MPI tests (MPICH)",
         "MPI tests simulated (SimGrid SMPI)", "ruff", "pytest (two workers)",
         "pytest (serial: testbeds, root)"]


def _stub(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


def _scratch(tmp_path: Path, install: str, build: str, ctest: str,
             python: str) -> tuple[Path, dict[str, str]]:
    """A scratch tree holding a copy of scripts/test, whose scripts/install-deps and
    scripts/build are stubs with the bodies given, and an environment whose PATH puts stub
    ctest and python first: (the copied script, the environment)."""
    tree = tmp_path / "tree"
    (tree / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "test", tree / "scripts" / "test")
    _stub(tree / "scripts" / "install-deps", install)
    _stub(tree / "scripts" / "build", build)
    bin_dir = tmp_path / "bin"
    _stub(bin_dir / "ctest", ctest)
    _stub(bin_dir / "python", python)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", TMPDIR=str(tmp_path))
    env.pop("VIRTUAL_ENV", None)
    return tree / "scripts" / "test", env


def _run(tmp_path: Path, fail_dir: str | None = None, build_fails: str | None = None,
         meet: bool = False) -> tuple[subprocess.CompletedProcess[str], str]:
    """scripts/test in a scratch tree; ctest fails in fail_dir (naming one failed test),
    scripts/build fails for the flag build_fails; with meet, the Open MPI ctest waits (up
    to 60 s, else fails) for the serial pytest part to have started, and the SMPI ctest
    for the pytest workers."""
    log = tmp_path / "calls.log"
    bfail = f'; [ "${{1:-}}" != {build_fails} ] || exit 1' if build_fails else ""
    fail = ""
    if fail_dir:
        fail = (f'if [ "$2" = {fail_dir} ]; then mkdir -p {fail_dir}/Testing/Temporary; '
                f'echo 7:wavefront_test > {fail_dir}/Testing/Temporary/LastTestsFailed.log; '
                "echo 'ctest: 1 test failed'; exit 8; fi")
    serial, workers = tmp_path / "serial-started", tmp_path / "workers-started"

    def wait_for(d: str, marker: Path) -> str:  # ctest in d waits up to 60 s for marker
        return (f'\nif [ "$2" = {d} ]; then i=0; while [ ! -e {marker} ]; do '
                'i=$((i + 1)); [ $i -lt 600 ] || exit 9; sleep 0.1; done; fi')
    if meet:
        fail += wait_for("build", serial) + wait_for("build-smpi", workers)
    script, env = _scratch(
        tmp_path, install=f'echo "install-deps $*" >> {log}',
        build=f'echo "build $*" >> {log}{bfail}', ctest=f'echo "ctest $*" >> {log}\n{fail}',
        python=f'echo "python $*" >> {log}\n'
               f'case "$*" in *"-m serial"*) touch {serial};; *"-n 2"*) touch {workers};; esac')
    r = subprocess.run(["bash", str(script)], capture_output=True, text=True,
                       timeout=150, env=env, cwd=script.parents[1])
    return r, log.read_text()


def _summary(out: str) -> list[str]:
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("== summary"))
    return lines[at + 1:]


def test_a_failing_part_does_not_stop_the_others(tmp_path: Path) -> None:
    r, calls = _run(tmp_path, "build-asan")
    assert r.returncode == 1, r.stdout + r.stderr
    # every part ran: the ones after the failing ASan ctest too
    for want in ["install-deps", "build --asan", "ctest --test-dir build-asan",
                 "build --mpich", "ctest --test-dir build-mpich", "build --smpi",
                 "ctest --test-dir build-smpi", "python -m ruff check",
                 "python -m pytest -q -rs -n 2 --dist loadscope -m not serial",
                 "python -m pytest -q -rs -m serial"]:
        assert want in calls, f"{want!r} not run:\n{calls}"
    summary = _summary(r.stdout)
    assert len(summary) == len(PARTS) + 1, summary
    for line, name in zip(summary, PARTS, strict=False):
        assert name in line, (line, name)
        if "AddressSanitizer" in name:
            assert line.startswith("FAIL") and line.endswith(": wavefront_test"), line
        else:
            assert line.startswith("pass"), line
    assert summary[-1].startswith("scripts/test: 1 of 8 parts failed (pytest")


def test_all_parts_passing_exit_zero(tmp_path: Path) -> None:
    r, _ = _run(tmp_path, None)
    assert r.returncode == 0, r.stdout + r.stderr
    summary = _summary(r.stdout)
    assert all(line.startswith("pass") for line in summary[:-1]) and len(summary) == 9
    assert summary[-1] == "scripts/test: all 8 parts passed"


def test_a_failed_build_fails_its_part_and_skips_its_ctest(tmp_path: Path) -> None:
    # the MPICH build fails: its ctest does not run, the part fails, the rest still runs
    r, calls = _run(tmp_path, build_fails="--mpich")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "ctest --test-dir build-mpich" not in calls and "ctest --test-dir build-smpi" in calls
    summary = _summary(r.stdout)
    assert summary[3].startswith("FAIL") and "MPICH" in summary[3], summary
    assert summary[-1].startswith("scripts/test: 1 of 8 parts failed (pytest")


def test_lanes_run_at_once_and_the_workers_start_when_one_ends(tmp_path: Path) -> None:
    # the Open MPI ctest passes only once the serial part has started, and the SMPI ctest
    # (the C lane's last) only once the pytest workers have started: one part after the
    # other, or workers waiting for both lanes, would wait in vain and fail those parts
    r, calls = _run(tmp_path, meet=True)
    assert r.returncode == 0, r.stdout + r.stderr
    summary = _summary(r.stdout)
    assert summary[1].startswith("pass") and "Open MPI" in summary[1], summary
    assert summary[4].startswith("pass") and "SMPI" in summary[4], summary


def test_an_interrupt_stops_every_lane_and_says_so(tmp_path: Path) -> None:
    # every stub hangs: SIGINT to the run's process group (what Ctrl-C sends) ends it with
    # 130, the summary says it was interrupted (never "all parts passed"), nothing is left
    nap = f"sleep {300 + os.getpid() % 97}"  # a command line no other process has
    script, env = _scratch(tmp_path, install="exit 0", build="exit 0", ctest=nap, python=nap)
    p = subprocess.Popen(["bash", str(script)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, env=env, cwd=script.parents[1],
                         start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _running(nap):
        time.sleep(0.1)
    os.killpg(p.pid, signal.SIGINT)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 130, out
    assert out.splitlines()[-1].startswith("scripts/test: interrupted"), out
    assert "parts passed" not in out
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _running(nap):
        time.sleep(0.1)
    assert not _running(nap), out


def _running(cmdline: str) -> bool:
    return subprocess.run(["pgrep", "-f", f"^{cmdline}$"], capture_output=True,
                          check=False).returncode == 0
