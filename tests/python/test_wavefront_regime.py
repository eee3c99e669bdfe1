"""The disk-regime classification of wavefront runs (mpilab.wavefront_regime) on synthetic
counters, `mpilab wavefront regime` and its refusals, the cgroup accounting reader."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mpilab.disk import dev
from mpilab.errors import MpilabError
from mpilab.wavefront_regime import (
    MEASURED_GAIN,
    DiskLimits,
    RunCounters,
    classify,
    counters_from_results,
)

HDD = DiskLimits(200, 200, 150e6, 150e6)       # requests cost more than bytes
SLOW = DiskLimits(250, 250, 50e6, 50e6)        # bytes cost more than requests


def run(total: float, rb: float, rr: float, *, it: int = 2, eng_rb: float | None = None,
        wb: float = 0.0, wr: float = 0.0) -> RunCounters:
    """A run of `it` iterations; rb, rr, wb, wr per iteration at the device."""
    eng = rb if eng_rb is None else eng_rb
    return RunCounters(it, total, eng * it, wb * it, 30000 * it, 300 * it,
                       rb * it, wb * it, rr * it, wr * it)


def test_requests_bound_when_the_requests_take_longer_than_the_bytes() -> None:
    # the block layout on a 200 requests/s disk: 1286 requests of 330 KB per iteration
    r = classify(run(2 * 6.4, 422e6, 1286), HDD)
    assert r.name == "requests-bound"
    assert r.t_req == pytest.approx(1286 / 200)
    assert r.t_bw == pytest.approx(422e6 / 150e6)
    assert r.requests_from == "device"
    assert "requests-bound" in r.line() and "optimized layout" in r.line()


def test_the_same_run_is_bandwidth_bound_on_a_disk_with_less_bandwidth() -> None:
    r = classify(run(2 * 8.5, 422e6, 1286), SLOW)
    assert r.name == "bandwidth-bound"
    assert r.t_bw == pytest.approx(422e6 / 50e6)
    assert r.t_bw > r.t_req


def test_large_requests_are_bandwidth_bound_even_on_the_request_capped_disk() -> None:
    # the optimized layout with 1280 KiB requests: 424 per iteration
    assert classify(run(2 * 3.0, 453e6, 424), HDD).name == "bandwidth-bound"


def test_pages_read_again_make_it_memory_limited() -> None:
    r = classify(run(2 * 10.0, 1.3 * 422e6, 1700, eng_rb=422e6), SLOW)
    assert r.name == "memory-limited"
    assert r.reread == pytest.approx(1.3)
    # at the limit it is not yet
    assert classify(run(2 * 10.0, 1.05 * 422e6, 1700, eng_rb=422e6), SLOW).name != \
        "memory-limited"


def test_not_io_bound_when_the_bound_is_under_half_the_time() -> None:
    r = classify(run(2 * 20.0, 422e6, 1286, eng_rb=300e6), SLOW)   # bound 8.4 of 20 s
    assert r.name == "not-io-bound"
    assert r.io_share == pytest.approx(422e6 / 50e6 / 20.0)
    assert "no layout gain" in r.expected_gain()


def test_writes_count_against_their_own_limits() -> None:
    lim = DiskLimits(200, 20, 150e6, 150e6)   # few write requests/s
    r = classify(run(2 * 6.0, 100e6, 100, wb=50e6, wr=100), lim)
    assert r.t_req == pytest.approx(100 / 20)
    assert r.name == "requests-bound"


def test_engine_requests_stand_in_when_the_device_did_not_count_them() -> None:
    c = RunCounters(2, 20.0, 844e6, 0.0, 2572, 0.0, None, None, None, None)
    r = classify(c, HDD)
    assert r.requests_from == "engine"
    assert r.t_req == pytest.approx(2572 / 200 / 2)
    assert "upper bound" in r.line()


def test_expected_gain_names_the_measured_range_of_its_regime() -> None:
    for name in ("requests-bound", "bandwidth-bound"):
        lo, hi, disk = MEASURED_GAIN[name]
        assert lo <= hi
        rr, t = (1286, 6.5) if name == "requests-bound" else (100, 3.0)
        r = classify(run(2 * t, 422e6, rr), HDD)
        assert r.name == name
        assert f"{lo:.2f}-{hi:.2f}x" in r.expected_gain() and disk in r.expected_gain()


@pytest.mark.parametrize("bad", [
    {"iterations": 0}, {"total_s": 0.0}, {"total_s": math.nan}, {"bytes_read": -1.0},
    {"dev_requests_read": math.inf}, {"requests_read": "12"}, {"iterations": True}])
def test_bad_counters_are_refused_with_their_name(bad: dict[str, Any]) -> None:
    base = {"iterations": 2, "total_s": 10.0, "bytes_read": 1e8, "bytes_written": 0.0,
            "requests_read": 100.0, "requests_written": 0.0, "dev_requests_read": None}
    base.update(bad)
    with pytest.raises(MpilabError, match=next(iter(bad))):
        classify(RunCounters(**base), HDD)


def test_bad_limits_are_refused() -> None:
    with pytest.raises(MpilabError, match="read_iops"):
        classify(run(10.0, 1e8, 10), DiskLimits(0, 200, 1e6, 1e6))


def test_counters_from_a_results_document() -> None:
    doc = {"wavefront": {"iterations": 3, "total_s": 9.0, "bytes_read": 30.0,
                         "bytes_written": 10.0, "requests_read": 6, "requests_written": 3,
                         "dev_read_bytes": 33, "dev_write_bytes": None}}
    c = counters_from_results(doc, "r.json")
    assert (c.iterations, c.dev_bytes_read, c.dev_bytes_written, c.dev_requests_read) == \
        (3, 33, None, None)
    with pytest.raises(MpilabError, match="r.json: wavefront.total_s missing"):
        counters_from_results({"wavefront": {"iterations": 3}}, "r.json")
    with pytest.raises(MpilabError, match="not a wavefront results file"):
        counters_from_results([], "r.json")


def _results(tmp: Path, **over: Any) -> Path:
    wf = {"iterations": 2, "total_s": 12.8, "bytes_read": 844e6, "bytes_written": 151e6,
          "requests_read": 68000, "requests_written": 600, "dev_read_bytes": 844e6,
          "dev_write_bytes": 151e6}
    wf.update(over)
    p = tmp / "run.json"
    p.write_text(json.dumps({"schema": "mpilab.results/1", "wavefront": wf}))
    return p


def test_cli_regime_from_a_spec_and_from_options(run_cli: Callable[..., Any],
                                                 tmp_path: Path) -> None:
    _results(tmp_path)
    (tmp_path / "hdd.toml").write_text(
        '[[disk]]\nname = "a"\nsize = "1G"\nmodel = "throttle"\nread_iops = 200\n'
        'write_iops = 200\nread_bw = "150MB"\nwrite_bw = "150MB"\n')
    p = run_cli("wavefront", "regime", "run.json", "--spec", "hdd.toml",
                "--dev-requests-read", "2572", "--dev-requests-written", "300")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("regime: requests-bound"), p.stdout
    p = run_cli("wavefront", "regime", "run.json", "--read-iops", "250", "--read-bw", "50MB",
                "--dev-requests-read", "2572", "--dev-requests-written", "300")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("regime: bandwidth-bound"), p.stdout
    # without device request counts: the engine's, said to be an upper bound
    p = run_cli("wavefront", "regime", "run.json", "--read-iops", "200", "--read-bw", "150MB")
    assert p.returncode == 0 and "upper bound" in p.stdout


@pytest.mark.parametrize("args,content,expected", [
    (["missing.json", "--read-iops", "200", "--read-bw", "1MB"], None,
     r"mpilab: missing.json: no such file"),
    (["run.json", "--read-iops", "200", "--read-bw", "1MB"], "{",
     r"mpilab: run.json:\d+: malformed JSON"),
    (["run.json", "--read-iops", "200", "--read-bw", "1MB"], '{"schema": 1}',
     r"mpilab: run.json: not a wavefront results file"),
    (["run.json", "--read-iops", "200", "--read-bw", "1MB"],
     '{"wavefront": {"iterations": 2, "total_s": NaN, "bytes_read": 1, "bytes_written": 1, '
     '"requests_read": 1, "requests_written": 1}}', r"mpilab: run.json:1: .*NaN"),
    (["run.json"], "ok", r"mpilab: regime: give the disk's limits"),
    (["run.json", "--spec", "x.toml", "--read-iops", "2"], "ok", r"mpilab: regime: --spec or"),
    (["run.json", "--read-iops", "200", "--read-bw", "fast"], "ok",
     r".*argument --read-bw: .*'fast'"),
    (["run.json", "--read-iops", "0", "--read-bw", "1MB"], "ok", r".*argument --read-iops"),
    (["run.json", "--spec", "nosuch.toml"], "ok", r"mpilab: .*nosuch.toml"),
])
def test_cli_regime_bad_input_one_line_exit_2(run_cli: Callable[..., Any], tmp_path: Path,
                                              args: list[str], content: str | None,
                                              expected: str) -> None:
    if content == "ok":
        _results(tmp_path)
    elif content is not None:
        (tmp_path / "run.json").write_text(content)
    p = run_cli("wavefront", "regime", *args)
    assert p.returncode == 2
    lines = [ln for ln in p.stderr.splitlines() if ln.strip() and not ln.startswith("usage:")
             and not ln.startswith("  ")]
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr

    assert re.match(expected, lines[0]), lines[0]
    assert p.stdout == ""


def test_cli_run_on_disks_that_are_not_up_is_refused(run_cli: Callable[..., Any],
                                                     tmp_path: Path) -> None:
    from conftest import cli_env

    env = cli_env()
    env["MPILAB_DISK_STATE_ROOT"] = str(tmp_path / "state")
    p = run_cli("wavefront", "run", "--data", "d", "--coef", "c", "--iterations", "1",
                "--disk", "nodisk", env=env)
    assert p.returncode == 2
    assert p.stderr.strip() == ("mpilab: --disk nodisk: disks 'nodisk' are not up (mpilab disk "
                                "up SPEC --prefix nodisk)")


def test_throttle_counters_from_a_fake_cgroup_v1_tree(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    cg = tmp_path / "blkio" / "wfr-disk"
    cg.mkdir(parents=True)
    (cg / "blkio.throttle.io_serviced").write_text(
        "7:3 Read 1286\n7:3 Write 40\n7:4 Read 9\n7:3 Total 1326\nTotal 1335\n")
    (cg / "blkio.throttle.io_service_bytes").write_text(
        "7:3 Read 422000000\n7:3 Write 75000000\n7:3 Total 497000000\nTotal 497000000\n")
    monkeypatch.setattr(dev, "CGROUP_ROOT", tmp_path)
    assert dev.throttle_counters("wfr", "7:3") == {
        "req_read": 1286.0, "req_write": 40.0, "bytes_read": 422e6, "bytes_write": 75e6}
    assert dev.throttle_counters("wfr", "7:9") == {}
    with pytest.raises(MpilabError, match="cannot read the cgroup's I/O accounting"):
        dev.throttle_counters("other", "7:3")


def test_throttle_counters_from_a_fake_cgroup_v2_tree(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cgroup.controllers").write_text("io memory\n")
    cg = tmp_path / "wfr-disk"
    cg.mkdir()
    (cg / "io.stat").write_text("7:3 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n")
    monkeypatch.setattr(dev, "CGROUP_ROOT", tmp_path)
    assert dev.throttle_counters("wfr", "7:3") == {
        "req_read": 1.0, "req_write": 2.0, "bytes_read": 4096.0, "bytes_write": 8192.0}


def test_waiting_for_reads_makes_a_run_io_bound_beyond_its_count_bound() -> None:
    # dependent synchronous reads: 133 requests/iteration bound 0.67 s of 1.7 s, but the
    # workers waited 1.4 s per iteration for their reads
    c = RunCounters(2, 3.4, 95e6, 95e6, 30000, 84, 88e6, 0.0, 266, 0.0, io_wait_s=2.8)
    r = classify(c, HDD)
    assert r.name == "requests-bound"
    assert r.io_share == pytest.approx(1.4 / 1.7)
    without = RunCounters(2, 3.4, 95e6, 95e6, 30000, 84, 88e6, 0.0, 266, 0.0)
    assert classify(without, HDD).name == "not-io-bound"


def test_io_wait_comes_from_the_workers_of_a_results_document() -> None:
    doc = {"wavefront": {"iterations": 1, "total_s": 2.0, "bytes_read": 1, "bytes_written": 1,
                         "requests_read": 1, "requests_written": 1,
                         "per_worker": [{"io_wait_s": 1.0}, {"io_wait_s": 2.0}]}}
    assert counters_from_results(doc, "r.json").io_wait_s == pytest.approx(1.5)
    doc["wavefront"]["per_worker"] = [{"io_wait_s": None}]
    assert counters_from_results(doc, "r.json").io_wait_s is None
