"""The results-loader fuzzer (tests/fuzz/fuzz_results.py) for a short fixed run: a fixed
seed, so the inputs are the same on every machine; longer runs: tests/fuzz/README.md."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


def _fuzzer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fuzz_results",
                                                  REPO / "tests" / "fuzz" / "fuzz_results.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_loader_fuzz_short_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fz = _fuzzer()
    rc = fz.main(["--iterations", "150", "--seed", "1", "--render-every", "6",
                  "--failures", str(tmp_path)])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert "150 inputs" in out.out and "no invariant failed" in out.out
    assert not list(tmp_path.iterdir())


def test_the_invariant_catches_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness itself can fail: an exception other than MpilabError is reported."""
    fz = _fuzzer()

    def boom(text: str, name: str) -> None:
        raise OverflowError("int too large to convert to float")

    monkeypatch.setattr(fz.results, "parse", boom)
    accepted, bad = fz.check("{}", False)
    assert not accepted and bad and "OverflowError" in bad
