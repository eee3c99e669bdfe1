"""bench/wavefront_fig7a.py: Fig. 7a drawn from wavefront_disk.py's rounds.json files."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "wavefront_fig7a.py"
sys.path.insert(0, str(ROOT / "bench"))

import wavefront_fig7a  # noqa: E402


def rounds_file(tmp_path: Path, name: str, rounds: object) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(rounds))
    return p


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=300)


def cfg(t: float, bound: float = 1.0) -> dict[str, float]:
    return {"s_per_iter": t, "bound_model": bound}


def test_load_merges_runs_and_rounds(tmp_path: Path) -> None:
    a = rounds_file(tmp_path, "a.json", [
        {"7a/block/128/pread": cfg(5.0), "7a/optimized/128/direct": cfg(4.0), "7b/waves1": {}},
        {"7a/block/128/pread": cfg(6.0), "7a/optimized/128/direct": cfg(4.5)}])
    b = rounds_file(tmp_path, "b.json", [{"7a/block/256/pread": cfg(2.0, 1.9)}])
    s = wavefront_fig7a.load([str(a), str(b)])
    assert s == {"block pread": {128: [(5.0, 1.0), (6.0, 1.0)], 256: [(2.0, 1.9)]},
                 "optimized direct": {128: [(4.0, 1.0), (4.5, 1.0)]}}


@pytest.mark.skipif(importlib.util.find_spec("kaleido") is None,
                    reason="kaleido (the static extra) not installed")
def test_writes_png_and_svg(tmp_path: Path) -> None:
    a = rounds_file(tmp_path, "a.json", [
        {"7a/block/64/pread": cfg(18.0, 17.5), "7a/block/128/pread": cfg(5.9, 5.7),
         "7a/optimized/64/direct": cfg(14.5, 14.1), "7a/optimized/128/direct": cfg(4.1, 4.0)}])
    for name, magic in (("f.png", b"\x89PNG"), ("f.svg", b"<svg")):
        r = run("--out", str(tmp_path / name), str(a))
        assert r.returncode == 0, r.stderr
        data = (tmp_path / name).read_bytes()
        assert magic in data[:200]
        if name.endswith(".svg"):
            assert b"optimized direct" in data and b"block pread" in data
    assert not list(tmp_path.glob("*.tmp.*"))


@pytest.mark.parametrize("content, expect", [
    ("{not json", "a.json:1: not JSON"),
    ('{"7a/block/1/pread": 1}', "expected a list of rounds"),
    ("[1]", "round 1 is not an object"),
    ('[{"7a/block/x/pread": {"s_per_iter": 1}}]', "no numeric s_per_iter"),
    ('[{"7a/block/64/pread": {"s_per_iter": -1}}]', "is not a positive time"),
    ('[{"7b/waves1": {"s_per_iter": 1}}]', "no Fig. 7a configuration"),
])
def test_bad_input_one_line(tmp_path: Path, content: str, expect: str) -> None:
    a = tmp_path / "a.json"
    a.write_text(content)
    r = run("--out", str(tmp_path / "f.png"), str(a))
    assert r.returncode == 2
    assert expect in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "f.png").exists()


def test_bad_output_name_and_directory_input(tmp_path: Path) -> None:
    r = run("--out", str(tmp_path / "f.txt"), str(tmp_path))
    assert r.returncode == 2 and "expected a .png or .svg name" in r.stderr
    r = run("--out", str(tmp_path / "f.png"), str(tmp_path))
    assert r.returncode == 2 and "is a directory" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
