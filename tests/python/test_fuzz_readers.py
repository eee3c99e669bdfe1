"""The document readers' fuzzer (bench/fuzz_readers.py) for a short fixed run per reader:
a fixed seed and a fixed number of inputs; longer runs: `--minutes` (docs/hardening.md)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
pytest.importorskip("hypothesis")


def _fuzzer() -> ModuleType:
    if str(REPO / "bench") not in sys.path:  # the script imports the bench harness
        sys.path.insert(0, str(REPO / "bench"))
    spec = importlib.util.spec_from_file_location("fuzz_readers",
                                                  REPO / "bench" / "fuzz_readers.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


FZ = _fuzzer()


@pytest.mark.parametrize("reader", sorted(FZ.READERS))
def test_reader_fuzz_short_run(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               reader: str) -> None:
    rc = FZ.main(["--reader", reader, "--minutes", "0", "--examples", "40", "--seed", "1",
                  "--findings", str(tmp_path / "findings")])
    out = capsys.readouterr()
    assert rc == 0, out.err[-3000:]
    m = re.search(rf"^{reader}: (\d+) inputs .* 0 uncaught$", out.out, re.M)
    assert m and int(m.group(1)) >= 20, out.out
    # the mutations reach both sides: some inputs are refused in one line
    assert ", 0 refused" not in out.out, out.out
    assert not (tmp_path / "findings").exists()


def test_the_invariant_catches_a_traceback(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness itself can fail: an exception other than MpilabError, or a message of
    several lines, is a finding saved with its input."""
    def boom(p: Path) -> None:
        raise OverflowError("int too large to convert to float")

    monkeypatch.setitem(FZ.READERS, "choice", FZ.Reader(FZ._choice_seeds, "json", boom))
    rc = FZ.main(["--reader", "choice", "--minutes", "0", "--examples", "3", "--seed", "1",
                  "--findings", str(tmp_path)])
    assert rc == 1 and len(list(tmp_path.iterdir())) == 3
    assert FZ.check_one(FZ.Reader(FZ._choice_seeds, "json", boom), b"{}", tmp_path)

    def two_lines(p: Path) -> None:
        raise FZ.MpilabError(f"{p}: one\ntwo")

    why = FZ.check_one(FZ.Reader(FZ._choice_seeds, "json", two_lines), b"{}", tmp_path)
    assert why and "not one line" in why
