"""Progress of the long-running commands (mpilab.stage.command, wrapped around them by
mpilab.cli): on a non-terminal standard error a plain line every period, standard output
untouched."""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import cli_env
from mpilab import cli, stage

LINE = re.compile(r"^  ([a-z ]+): \d+ s")


def _progress(text: str) -> list[str]:
    return [m.group(1) for m in map(LINE.match, text.splitlines()) if m]


def test_bench_shows_progress_on_stderr_and_keeps_stdout_clean(
        fake_bench: Callable[[str], dict[str, str]], run_cli: Callable[..., Any],
        tmp_path: Path) -> None:
    env = dict(fake_bench("slow"), MPILAB_PROGRESS_S="0.1")
    p = run_cli("bench", "--np", "1", "--launches", "1", "--out", "run.json", "--",
                "--ops", "bcast", env=env, timeout=240)
    assert p.returncode == 0, p.stderr
    # the runner sleeps a second: at 0.1 s a period, several lines
    assert len(_progress(p.stderr)) >= 2 and set(_progress(p.stderr)) == {"bench"}, p.stderr
    assert p.stdout.splitlines() == ["op bytes mean"]  # the runner's table alone
    assert (tmp_path / "run.json").is_file()


def test_report_shows_progress_on_stderr_and_writes_nothing_to_stdout(
        synthetic_results: Callable[..., dict[str, Any]],
        write_json: Callable[[Any, str], Path], run_cli: Callable[..., Any],
        tmp_path: Path) -> None:
    res = write_json(synthetic_results(), "r.json")
    env = dict(cli_env(), MPILAB_PROGRESS_S="0.01")
    p = run_cli("report", str(res), "-o", str(tmp_path / "r.html"), env=env, timeout=240)
    assert p.returncode == 0, p.stderr
    assert "report" in _progress(p.stderr), p.stderr
    assert not _progress(p.stdout), p.stdout
    assert (tmp_path / "r.html").is_file()


@pytest.mark.parametrize(("argv", "name"), [
    (["bench", "--np", "2"], "bench"),
    (["--mpi", "mpich", "tune", "sweep", "--np", "2"], "tune sweep"),
    (["tune", "choose", "x.json"], None),
    (["testbed", "up"], "testbed up"),
    (["testbed", "status"], None),
    (["survey"], None),  # draws its own progress
    (["--help"], None),
])
def test_which_commands_run_inside_the_progress_layer(argv: list[str],
                                                      name: str | None) -> None:
    assert cli._long_running(argv) == name


@pytest.mark.parametrize(("value", "want"), [
    ("0.5", 0.5), ("", stage.PERIOD), ("x", stage.PERIOD), ("-1", stage.PERIOD),
    ("inf", stage.PERIOD), ("nan", stage.PERIOD),
])
def test_the_period_comes_from_the_environment_when_it_is_a_positive_number(
        monkeypatch: pytest.MonkeyPatch, value: str, want: float) -> None:
    monkeypatch.setenv(stage.PERIOD_ENV, value)
    assert stage.period() == want
