"""The compact form of a results file (mpilab.samples_file): summaries in the JSON, samples
in an npz archive beside it. Every reader gets the samples back (report, diff, tune, the
quality check); a missing archive leaves the summaries, a foreign one is refused."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, make_results
from mpilab import results, samples_file
from mpilab.errors import MpilabError
from mpilab.tune import cli as tune_cli
from mpilab.tune import stats


def _pair_matrix_doc() -> dict[str, Any]:
    """A document whose p2p entry is a pair matrix (one pair's samples null: summarised)."""
    doc = make_results(ranks=3, sizes=(0, 4096))
    doc["measurements"] = [m for m in doc["measurements"] if m["op"] != "p2p"]
    pm = {"design": "full", "count": 3, "pairs_planned": 3, "rounds": 3,
          "i": [0, 0, 1], "j": [1, 2, 2], "round": [0, 1, 2],
          "median": [2e-6, 2.2e-6, 2.4e-6], "mean": [2e-6, 2.2e-6, 2.4e-6],
          "ci_half": [1e-8] * 3, "reps": [3, 3, 4], "invalid": [0] * 3,
          "converged": [True] * 3, "flags": [[], [], []],
          "samples": [[2e-6, 2.1e-6, 1.9e-6], None, [2.4e-6, 2.5e-6, 2.3e-6, 2.4e-6]]}
    doc["measurements"].insert(0, {"op": "p2p", "impl": "roundtrip", "timing": "p2p",
                                   "schedule": "parallel", "bytes": 0, "bytes_back": 0,
                                   "ranks": 3, "pair_matrix": pm})
    return doc


def _compact(doc: dict[str, Any], d: Path, name: str = "r.json") -> Path:
    out = d / name
    samples_file.write_compact(copy.deepcopy(doc), out,
                               d / samples_file.sidecar_name(name))
    return out


def _same_samples(a: dict[str, Any], b: dict[str, Any]) -> None:
    """b's samples are a's, to float32 precision (relative 6e-8), flags exactly."""
    assert len(a["measurements"]) == len(b["measurements"])
    for ma, mb in zip(a["measurements"], b["measurements"], strict=True):
        assert ma.get("valid") == mb.get("valid")
        assert ("samples" in ma) == ("samples" in mb)
        for x, y in zip(ma.get("samples") or [], mb.get("samples") or [], strict=True):
            assert y == pytest.approx(x, rel=1e-7)
        pa, pb = ma.get("pair_matrix"), mb.get("pair_matrix")
        if pa:
            for sa, sb in zip(pa["samples"], pb["samples"], strict=True):
                assert (sa is None) == (sb is None)
                assert sb is None or sb == pytest.approx(sa, rel=1e-7)


@pytest.mark.parametrize("make", [lambda: make_results(ranks=3, sizes=(0, 4096)),
                                  _pair_matrix_doc,
                                  lambda: json.loads((REPO / "tests/data/"
                                                      "survey-quick-np3.json").read_text())])
def test_compact_form_round_trips(make: Callable[[], dict[str, Any]], tmp_path: Path) -> None:
    doc = make()
    out = _compact(doc, tmp_path)
    text = out.read_text()
    assert '"samples": [' not in text and '"valid": [' not in text  # summaries only
    ref = json.loads(text)["samples_file"]
    assert ref["path"] == "r.samples.npz" and ref["dtype"] == "float32"
    assert ref["measurements"] == len(doc["measurements"])
    back = samples_file.attach(json.loads(text), out)
    _same_samples(doc, back)
    # the typed view: every measurement's samples and statistics as the full form's
    full = tmp_path / "full.json"
    full.write_text(json.dumps(doc))
    rf, rc = results.load(full), results.load(out)
    assert [m.samples for m in rc.measurements] == [
        pytest.approx(m.samples, rel=1e-7) for m in rf.measurements]
    assert [m.stats for m in rc.measurements] == [m.stats for m in rf.measurements]


def test_report_reads_both_forms_alike(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """The same run in the full and in the compact form gives the same report: the summary's
    winners come from the samples (a Mann-Whitney test from MIN_SAMPLES on), and a reader
    that lost them falls back to the intervals, which changes the page."""
    doc = make_results(ranks=3, sizes=(0, 4096, 65536))
    (tmp_path / "full.json").write_text(json.dumps(doc))
    _compact(doc, tmp_path, "compact.json")

    def page(name: str) -> str:
        p = run_cli("report", f"{name}.json", "-o", "page.html")
        assert p.returncode == 0, p.stderr
        # the page names its source file; otherwise the two pages must be the same
        return re.sub(r"(full|compact)\.json", "X.json", (tmp_path / "page.html").read_text())

    full = page("full")
    assert page("compact") == full
    (tmp_path / "compact.samples.npz").unlink()  # the check can fail: no samples, other page
    assert page("compact") != full


def test_diff_and_tune_read_the_samples_back(run_cli: Callable[..., Any],
                                             tmp_path: Path) -> None:
    doc = make_results(ranks=3, sizes=(0, 4096))
    (tmp_path / "full.json").write_text(json.dumps(doc))
    out = _compact(doc, tmp_path, "compact.json")
    raw = tune_cli._load_docs([str(out)])[0]  # what tune choose reads
    m0 = next(m for m in raw["measurements"] if m["op"] == "bcast")
    assert len(stats.launch_groups(m0)[0]) == len(m0["samples"]) > 0
    p = run_cli("diff", "full.json", "compact.json")
    assert p.returncode == 0, p.stderr
    # the table's rows (the closing note says what one launch a side cannot tell)
    rows = [r for r in p.stdout.splitlines()[1:] if not r.startswith("mpilab diff:")]
    assert rows and all(r.split()[3] == "1.000" for r in rows)  # B/A from the samples




def test_missing_archive_leaves_the_summaries(tmp_path: Path,
                                              capfd: pytest.CaptureFixture[str]) -> None:
    out = _compact(make_results(ranks=2, sizes=(0,)), tmp_path)
    (tmp_path / "r.samples.npz").unlink()
    r = results.load(out)
    assert r.measurements and all(m.samples == () for m in r.measurements)
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "r.samples.npz is missing" in err


def test_foreign_archive_is_refused_in_one_line(tmp_path: Path) -> None:
    out = _compact(make_results(ranks=2, sizes=(0,)), tmp_path)
    _compact(make_results(ranks=2, sizes=(0,), seed=2), tmp_path, "other.json")
    (tmp_path / "other.samples.npz").replace(tmp_path / "r.samples.npz")
    with pytest.raises(MpilabError, match=r"r\.samples\.npz: does not match .*r\.json"):
        results.load(out)
    doc = json.loads(out.read_text())
    doc["samples_file"]["path"] = "../elsewhere.npz"
    out.write_text(json.dumps(doc))
    with pytest.raises(MpilabError, match="samples_file.path"):
        results.load(out)


def _damaged(arrays: dict[str, Any], how: str) -> bytes | dict[str, Any]:
    """The arrays of an archive (or its bytes) damaged one way."""
    import numpy as np

    a = dict(arrays)
    s0 = next(k for k in sorted(a) if k.startswith("s"))
    if how == "garbage":
        return b"\x80\x04not a zip" * 50
    if how == "an array left out":
        del a[s0]
    elif how == "strings":
        a[s0] = np.array(["x"] * len(a[s0]))
    elif how == "2-D":
        a[s0] = np.zeros((2, 2), dtype=np.float32)
    elif how == "an object array":
        a[s0] = np.array([{"a": 1}], dtype=object)
    elif how == "infinity":
        a[s0] = np.full(len(a[s0]), np.inf, dtype=np.float32)
    elif how == "pair counts below -1":
        a["pn0"] = np.full(len(a["pn0"]), -5, dtype=np.int64)
    elif how == "pair counts too large":
        a["pn0"] = np.full(len(a["pn0"]), 10 ** 12, dtype=np.int64)
    elif how == "flags not matching the samples":
        a["v1"] = np.ones(len(a[s0]) + 3, dtype=np.bool_)
    elif how == "50 million samples":
        a[s0] = np.zeros(50_000_000, dtype=np.float32)
    elif how == "an array of no measurement":
        a["zz"] = np.zeros(2)
    return a


def _refused_with_matching_sha256(out: Path, npz: Path, bad: bytes) -> None:
    """The damaged archive `bad` written as out's samples file, its sha256 in out made to
    match: results.load refuses it in one MpilabError line naming the archive."""
    import hashlib

    npz.write_bytes(bad)
    meta = json.loads(out.read_text())
    meta["samples_file"]["sha256"] = hashlib.sha256(bad).hexdigest()
    out.write_text(json.dumps(meta))
    with pytest.raises(MpilabError) as e:
        results.load(out)
    assert "r.samples.npz" in str(e.value) and "\n" not in str(e.value)


def _corrupt_stream(npz: bytes, member: str, at: float) -> bytes:
    """The archive with `member`'s compressed data overwritten from fraction `at` of it by
    bytes no deflate stream holds (a reserved block type): the zip's directory intact."""
    import io
    import struct
    import zipfile

    with zipfile.ZipFile(io.BytesIO(npz)) as z:
        info = z.getinfo(member)
    name_len, extra_len = struct.unpack("<HH", npz[info.header_offset + 26:
                                                   info.header_offset + 30])
    start = info.header_offset + 30 + name_len + extra_len
    lo = start + int(info.compress_size * at)
    n = max(8, info.compress_size - (lo - start))
    return npz[:lo] + b"\xff" * n + npz[lo + n:]


@pytest.mark.parametrize("member, at", [("s1.npy", 0.0), ("s1.npy", 0.5), ("v1.npy", 0.5)])
def test_a_corrupt_compressed_stream_is_refused_in_one_line(tmp_path: Path, member: str,
                                                            at: float) -> None:
    """A member whose deflate stream is damaged (the archive's sha256 made to match):
    zlib's own error, in the array's header or in its data, and in a member the checks
    do not otherwise need (validity flags), is one MpilabError naming the archive."""

    doc = _pair_matrix_doc()
    doc["measurements"][1]["samples"] = [1e-6 + 1e-9 * k for k in range(400)]
    doc["measurements"][1]["valid"] = [k % 3 != 0 for k in range(400)]
    out = _compact(doc, tmp_path)
    npz = tmp_path / "r.samples.npz"
    bad = _corrupt_stream(npz.read_bytes(), member, at)
    _refused_with_matching_sha256(out, npz, bad)


@pytest.mark.parametrize("how", ["garbage", "an array left out", "strings", "2-D",
                                 "an object array", "infinity", "pair counts below -1",
                                 "pair counts too large", "flags not matching the samples",
                                 "50 million samples", "an array of no measurement"])
def test_damaged_archive_matching_its_sha256_is_refused_in_one_line(tmp_path: Path,
                                                                     how: str) -> None:
    """The archive's sha256 in the JSON made to match the damage: the reader itself must
    refuse what no writer makes (types, shapes, counts, names), in one MpilabError naming
    the archive, before decompressing more than the reference counts."""
    import io

    import numpy as np

    doc = _pair_matrix_doc()
    doc["measurements"][1]["valid"] = [True] * len(doc["measurements"][1]["samples"])
    out = _compact(doc, tmp_path)
    npz = tmp_path / "r.samples.npz"
    with np.load(npz) as z:
        arrays = {k: z[k] for k in z.files}
    bad = _damaged(arrays, how)
    if isinstance(bad, dict):
        buf = io.BytesIO()
        np.savez_compressed(buf, **bad)
        bad = buf.getvalue()
    _refused_with_matching_sha256(out, npz, bad)


@pytest.mark.parametrize("make", [lambda: make_results(ranks=3, sizes=(0, 4096)),
                                  _pair_matrix_doc])
def test_stream_compaction_is_the_whole_documents(make: Callable[[], dict[str, Any]],
                                                  tmp_path: Path) -> None:
    """The survey rewrites the runner's file one measurement at a time (mpilab.compact):
    the same JSON and archive as the whole document's compaction."""
    from mpilab import compact

    doc = make()
    src = tmp_path / "runner.json"
    src.write_text(json.dumps(doc, indent=1))
    n = compact.compact_file(src, src, tmp_path / "runner.samples.npz", "runner.samples.npz",
                             {"survey": {"ranks": 3}})
    whole = copy.deepcopy(doc)
    whole["survey"] = {"ranks": 3}
    _compact(whole, tmp_path, "whole.json")
    a, b = json.loads(src.read_text()), json.loads((tmp_path / "whole.json").read_text())
    assert n == a["samples_file"]["samples"] > 0
    for ref in (a, b):
        ref["samples_file"].pop("path")
    assert a == b
    _same_samples(doc, samples_file.attach(json.loads(src.read_text()), src))


@pytest.mark.parametrize("form", ["full", "compact"])
def test_a_negative_time_counted_as_valid_is_refused(tmp_path: Path, form: str) -> None:
    """The runner stores an impossible (negative) sample with valid false: one counted as
    valid, inline or from the archive, is refused naming it; flagged invalid it is read."""
    doc = make_results(ranks=2, sizes=(0,))
    m = doc["measurements"][0]
    m["samples"][1] = -2e-6
    out = tmp_path / "r.json"
    if form == "full":
        out.write_text(json.dumps(doc))
    else:
        out = _compact(doc, tmp_path)
    with pytest.raises(MpilabError, match=r"r\.json(:\d+)?: measurements\[0\]\.samples\[1\]: "
                                          r"-2e-06 s: a negative time counted as valid"):
        results.load(out)
    m["valid"][1] = False
    (tmp_path / "ok.json").write_text(json.dumps(doc))
    assert results.load(tmp_path / "ok.json").measurements[0].samples[1] == -2e-6
