"""Arguments are checked before the environment: a bad range or name is argparse's one-line
error (exit 2), not "testbed 'zz' is not up" (the testbed named here does not exist)."""
from __future__ import annotations

from pathlib import Path

import pytest
from mpilab.cli import main


@pytest.mark.parametrize("argv, opt", [
    (["multilane", "run", "--testbed", "zz", "--lanes", "many", "-o", "x.json"], "--lanes"),
    (["multilane", "run", "--testbed", "zz", "--lanes", "0", "-o", "x.json"], "--lanes"),
    (["multilane", "run", "--testbed", "zz", "--reps", "0", "-o", "x.json"], "--reps"),
    (["multilane", "run", "--testbed", "zz", "--np", "0", "-o", "x.json"], "--np"),
    (["testbed", "run", "--prefix", "zz", "--np", "0", "--", "true"], "--np"),
    (["survey", "--sizes", "abc"], "--sizes"),
    (["survey", "--sizes", "auto:1:0"], "--sizes"),
    (["compare", "--sizes", "-1"], "--sizes"),
    (["compare", "--scaling", "\u0663"], "--scaling"),
    (["diff", "a.json", "b.json", "--html", ""], "--html"),
    (["diff", "a.json", "b.json", "--variation-store", ""], "--variation-store"),
    (["tune", "export", "c.json", "--mpich", ""], "--mpich"),
    (["tune", "choose", "--dir", "", "--out", "x.json"], "--dir"),
    # a name no testbed can have (`testbed up` refuses it) is not looked up
    (["bench", "--testbed", "-1"], "--testbed"),
    (["survey", "--testbed", "\u0663"], "--testbed"),
    (["multilane", "run", "--testbed", "Zz", "-o", "x.json"], "--testbed"),
    (["tune", "sweep", "--testbed", "toolong1", "--dir", "sw", "--np", "2"], "--testbed"),
])
def test_bad_argument_before_environment(argv: list[str], opt: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {opt}" in err and "not up" not in err


@pytest.mark.parametrize("argv, names", [
    (["multilane", "run", "--sizes", "x"], "argument --sizes"),
    (["multilane", "run", "--sizes", "auto:1:0"], "argument --sizes"),
    (["multilane", "run", "--ops", "scatter,bogus"], "argument --ops"),
    (["multilane", "run", "--impls", "single,"], "argument --impls"),
    (["multilane", "run", "--model-bytes", "-1"], "argument --model-bytes"),
    (["multilane", "run", "--model-bytes", "1"], "argument --model-bytes"),
    (["multilane", "run", "--alpha-bytes", "99M"], "argument --alpha-bytes"),
    (["multilane", "run", "--sites", "map:"], "argument --sites"),
    (["testbed", "run", "--fault-grace", "-1", "--", "true"], "--fault-grace"),
    (["testbed", "run", "--timeout", "0", "--", "true"], "--timeout"),
    (["testbed", "run", "--congestion", "cu bic", "--", "true"], "argument --congestion"),
    (["testbed", "run", "--congestion", "nosuchcc", "--", "true"], "not a congestion control"),
    (["testbed", "run", "--mptcp", "--pathmig", "--", "true"], "--mptcp: not with --pathmig"),
    (["testbed", "run", "--pathmig", "--like-mptcp", "--", "true"],
     "--like-mptcp: only for a plain TCP job"),
    (["testbed", "run", "--mptcp-subflows", "1", "--like-mptcp", "--", "true"],
     "--like-mptcp: only for a plain TCP job"),
    (["testbed", "run", "--mpich-yield", "--mpi", "openmpi", "--", "true"],
     "--mpich-yield: only for an MPICH job"),
    (["testbed", "run", "--mpich-yield", "--", "true"], "--mpich-yield: only for an MPICH job"),
    (["testbed", "run", "--rails", "x", "--", "true"], "--rails"),
    (["testbed", "fail", "--random", "1", "--count", "0"], "--count"),
    (["testbed", "fail", "--random", "1", "--within", "x"], "--within"),
    (["testbed", "fail", "--random", "1", "--modes", "bogus"], "--modes"),
    (["testbed", "fail", "--random", "1", "--fault-duration", "-1"], "--fault-duration"),
    (["testbed", "fail", "--random", "1", "--fault-rails", "x"], "--fault-rails"),
    (["testbed", "fail", "--random", "1", "--nodes", ","], "--nodes"),
    (["testbed", "fail", "--random", "1", "--count", "100", "--within", "1"], "do not fit"),
])
def test_argument_named_although_the_testbed_is_not_up(
        argv: list[str], names: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Pure argument errors name the argument; the testbed (zz, never up) is not looked at."""
    from mpilab.testbed import net

    def looked(prefix: str) -> None:
        raise AssertionError(f"the testbed {prefix} was looked at")

    monkeypatch.setattr(net, "current_spec", looked)
    monkeypatch.setenv("MPILAB_TESTBED_PREFIX", "zz")
    if argv[:2] == ["multilane", "run"]:
        argv = argv + ["-o", "m.json"]
    try:
        status = main(argv)
    except SystemExit as e:
        status = e.code
    assert status == 2
    err = capsys.readouterr().err
    assert names in err and "not up" not in err and err.count("\n") == 1, err


@pytest.mark.parametrize("extra, why", [
    (["--lanes", "99"], "--lanes 99: more lanes than the 4 nodes"),
    (["--root", "99"], "--root 99: not a rank of the job (0..7)"),
    (["--np", "2", "--root", "2"], "--root 2: not a rank of the job (0..1)"),
])
def test_multilane_job_refused_before_it_starts(
        extra: list[str], why: str, tmp_path: object, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """On a testbed that is up (2 sites x 4 nodes, its spec read as from its state), a lane
    count or root the job cannot have is refused before the tool is looked up or launched."""
    from mpilab.multilane import run
    from mpilab.testbed import launch, net
    from mpilab.testbed.spec import Spec

    def started(*_a: object, **_k: object) -> None:
        raise AssertionError("the job was started")

    monkeypatch.setattr(net, "current_spec", lambda prefix: Spec(prefix=prefix))
    monkeypatch.setattr(run, "find_tool", started)
    monkeypatch.setattr(launch, "run", started)
    monkeypatch.chdir(str(tmp_path))
    status = main(["multilane", "run", "--testbed", "zz", "-o", "m.json", *extra])
    assert status == 2
    err = capsys.readouterr().err
    assert why in err and err.count("\n") == 1, err


def test_congestion_checked_against_the_kernel_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """A well-formed name is refused at parse time when the kernel lists no such control and
    no module provides it; a listed one (or any, when the kernel gives no list) passes."""
    from mpilab.pathmig import congestion
    from mpilab.testbed.cli import _congestion

    monkeypatch.setattr(congestion, "kernel_available", lambda: {"cubic", "reno"})
    monkeypatch.setattr(congestion, "kernel_module", lambda name: name == "vegas")
    assert _congestion("cubic") == "cubic" and _congestion("vegas") == "vegas"
    assert _congestion("auto") == "auto" and _congestion("default") == "default"
    with pytest.raises(ValueError, match=r"have: cubic reno"):
        _congestion("bogus")
    monkeypatch.setattr(congestion, "kernel_available", lambda: None)
    assert _congestion("bogus") == "bogus"


@pytest.mark.parametrize("action", ["up", "down", "status"])
def test_slurm_dir_with_a_line_break_refused_before_anything(
        action: str, capsys: pytest.CaptureFixture[str], tmp_path: object) -> None:
    """A folder name Slurm's configuration cannot hold is an argument error (exit 2): no
    daemon is started, nothing is created."""
    import os

    d = os.path.join(str(tmp_path), "a\nb")
    with pytest.raises(SystemExit) as e:
        main(["slurm", action, "--dir", d])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument --dir" in err and "in the path" in err
    assert not os.path.lexists(d)


@pytest.mark.parametrize("sub", [["run", "--testbed", "zz"], ["report", "m.json"]])
def test_multilane_output_that_is_a_directory_refused_first(
        tmp_path: Path, sub: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """-o naming a directory is refused before the testbed (or the documents) is read."""
    code = main(["multilane", *sub, "-o", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "is a directory" in err and "not up" not in err and "m.json" not in err
