"""Arguments are checked before the environment: a bad range or name is argparse's one-line
error (exit 2), not "testbed 'zz' is not up" (the testbed named here does not exist)."""
from __future__ import annotations

import pytest
from mpilab.cli import main


@pytest.mark.parametrize("argv, opt", [
    (["multilane", "run", "--testbed", "zz", "--lanes", "many", "-o", "x.json"], "--lanes"),
    (["multilane", "run", "--testbed", "zz", "--lanes", "0", "-o", "x.json"], "--lanes"),
    (["multilane", "run", "--testbed", "zz", "--reps", "0", "-o", "x.json"], "--reps"),
    (["multilane", "run", "--testbed", "zz", "--np", "0", "-o", "x.json"], "--np"),
    (["testbed", "run", "--prefix", "zz", "--np", "0", "--", "true"], "--np"),
])
def test_bad_argument_before_environment(argv: list[str], opt: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {opt}" in err and "not up" not in err
