"""TCP retransmissions around a run (mpilab.tcpcount): the counters read, their change, and
the one-sided widening of beta's and G's intervals, on synthetic fits of a shaped link and
synthetic counter pairs."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from mpilab import quality, results, tcpcount
from mpilab.commands import bench as bench_cmd

SNMP_TEXT = ("Ip: Forwarding DefaultTTL InReceives\nIp: 1 64 1000\n"
             "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails "
             "EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n"
             "Tcp: 1 200 120000 -1 10 5 0 0 2 5000 {out} {re} 0 3 0\n"
             "Udp: InDatagrams NoPorts\nUdp: 7 0\n")

# a 100 Mbit/s link's TCP payload time per byte (8/rate x 1514/1448), and fits of it whose
# estimate sits above it as a stream that loses segments at the shaper does
TRUTH = 8.0 / 100e6 * 1514.0 / 1448.0


def _fit_doc(excess: float, half: float) -> dict[str, Any]:
    """A results document with one pair's Hockney beta and LogGP G at TRUTH x (1 + excess),
    intervals of +-half around them (as the fitter writes them)."""
    v = TRUTH * (1 + excess)
    q = {"raw": v, "lo": v * (1 - half), "hi": v * (1 + half), "flags": []}
    return {"schema": "mpilab.results/1",
            "provenance": {"tool": "mpilab-bench", "ranks": 2},
            "measurements": [],
            "models": {
                "hockney": {"pairs": [{"i": 0, "j": 1, "alpha": 2e-3, "beta": v,
                                       "quality": {"beta": dict(q)}}]},
                "loggp": {"pairs": [{"i": 0, "j": 1, "L": 2e-3, "os": 1e-6, "or": 1e-6,
                                     "g": 1e-6, "G": v, "per_size": [],
                                     "quality": {"G": copy.deepcopy(q)}}]}}}


def _holds(q: dict[str, Any]) -> bool:
    return bool(q["lo"] <= TRUTH <= q["hi"])


def test_parse_snmp_reads_the_tcp_line() -> None:
    assert tcpcount.parse_snmp(SNMP_TEXT.format(out=123456, re=78)) == {
        "OutSegs": 123456, "RetransSegs": 78}


@pytest.mark.parametrize("text", [
    "", "Tcp: OutSegs RetransSegs\n", "Tcp: OutSegs RetransSegs\nTcp: 12\n",
    "Tcp: OutSegs RetransSegs\nTcp: 12 x\n", "Tcp: OutSegs\nTcp: 12\n",
    "Tcp: OutSegs RetransSegs\nTcp: -1 0\n", "\x00\xff garbage",
])
def test_parse_snmp_garbage_is_none(text: str) -> None:
    assert tcpcount.parse_snmp(text) is None


def test_read_local_counters_of_this_namespace() -> None:
    got = tcpcount.read(None)
    if not Path(tcpcount.SNMP).is_file():
        pytest.skip("no /proc/net/snmp here")
    assert got is not None and got["OutSegs"] >= got["RetransSegs"] >= 0


def test_delta_fraction_and_invalid_counters() -> None:
    a = {"OutSegs": 1000, "RetransSegs": 10}
    d = tcpcount.delta(a, {"OutSegs": 21000, "RetransSegs": 40}, "here")
    assert (d["out_segs"], d["retrans_segs"], d["flags"]) == (20000, 30, [])
    assert d["retrans_fraction"] == pytest.approx(0.0015)
    nothing = tcpcount.delta(a, dict(a), "here")  # no segment sent: no fraction, no flag
    assert nothing["retrans_fraction"] is None and nothing["flags"] == []
    for before, after in ((a, {"OutSegs": 500, "RetransSegs": 10}),      # went backwards
                          (a, {"OutSegs": 2000, "RetransSegs": 5}),
                          (a, {"OutSegs": 1001, "RetransSegs": 20}),      # more resent than sent
                          (None, a), (a, None)):                          # unreadable
        d = tcpcount.delta(before, after, "here")
        assert d["flags"] == [tcpcount.COUNTERS_INVALID] and d["retrans_fraction"] is None


def test_no_counters_leave_the_fit_unchanged() -> None:
    doc = _fit_doc(0.0035, 0.002)
    before = copy.deepcopy(doc["models"])
    tcp = tcpcount.delta(None, None, "here")
    assert tcpcount.widen(doc, tcp) == 0
    assert doc["models"] == before
    assert doc["provenance"]["tcp"]["flags"] == [tcpcount.COUNTERS_INVALID]
    assert "not accounted for" in (tcpcount.note(tcp, 0) or "")
    clean = _fit_doc(0.0035, 0.002)
    tcp0 = tcpcount.delta({"OutSegs": 0, "RetransSegs": 0},
                          {"OutSegs": 50000, "RetransSegs": 0}, "here")
    assert tcpcount.widen(clean, tcp0) == 0 and clean["models"] == before
    assert tcpcount.note(tcp0, 0) is None


@pytest.mark.parametrize("excess, retrans", [
    (0.0035, 0.0013), (0.0023, 0.0017), (0.0038, 0.00159), (0.0024, 0.00118)])
def test_retransmissions_widen_the_fast_end_only(excess: float, retrans: float) -> None:
    """G above the wire by 1.3-2.7 times the retransmitted share (the shaped WAN's runs),
    interval +-0.2%: it misses the wire's time per byte as measured and holds it widened;
    the estimate and the slow end stay."""
    doc = _fit_doc(excess, 0.002)
    q0 = doc["models"]["loggp"]["pairs"][0]["quality"]["G"]
    assert not _holds(q0)
    lo0, hi0, g0 = q0["lo"], q0["hi"], doc["models"]["loggp"]["pairs"][0]["G"]
    n = 200000
    tcp = tcpcount.delta({"OutSegs": 5, "RetransSegs": 0},
                         {"OutSegs": 5 + n, "RetransSegs": round(retrans * n)}, "tb")
    assert tcpcount.widen(doc, tcp) == 2
    for kind, name in (("hockney", "beta"), ("loggp", "G")):
        p = doc["models"][kind]["pairs"][0]
        q = p["quality"][name]
        assert p[name] == g0 and q["hi"] == hi0 and q["lo_measured"] == lo0
        assert q["lo"] == pytest.approx(lo0 * (1 - tcpcount.WIDEN_FACTOR * retrans))
        assert _holds(q)
        assert quality.RETRANS_WIDENED in q["flags"]
        assert abs(p[name] / TRUTH - 1) < 0.05
    line = tcpcount.note(tcp, 2) or ""
    assert f"{retrans * 100:.3f}%" in line and "estimates are unchanged" in line
    assert tcpcount.widen(doc, tcp) == 0  # once only: the measured end is kept
    results.parse(json.dumps(doc), "widened.json")  # the schema accepts what it wrote


def test_value_at_measured_end_keeps_ci_edge() -> None:
    doc = _fit_doc(0.001, 0.002)
    q = doc["models"]["loggp"]["pairs"][0]["quality"]["G"]
    q["lo"] = doc["models"]["loggp"]["pairs"][0]["G"]  # the fitter stretched it to hold G
    tcpcount.widen(doc, tcpcount.delta({"OutSegs": 0, "RetransSegs": 0},
                                       {"OutSegs": 1000, "RetransSegs": 2}, "tb"))
    assert quality.CI_EDGE in quality.value_flags(doc["models"]["loggp"]["pairs"][0]["G"],
                                                  doc["models"]["loggp"]["pairs"][0]["quality"],
                                                  "G")


def test_bench_records_counters_around_the_run(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """mpilab bench's step after the job: the counters' change in provenance.tcp, the
    intervals widened, the results file rewritten whole and one line on stderr."""
    out = tmp_path / "run.json"
    out.write_text(json.dumps(_fit_doc(0.0035, 0.002)))
    reads = iter([{"OutSegs": 100, "RetransSegs": 1}, {"OutSegs": 100100, "RetransSegs": 131}])
    monkeypatch.setattr(tcpcount, "read", lambda nss: next(reads))
    bench_cmd._tcp_after(tcpcount.Count.start(None), str(out))
    doc = results.read_raw(out)
    assert doc["provenance"]["tcp"]["retrans_segs"] == 130
    assert _holds(doc["models"]["loggp"]["pairs"][0]["quality"]["G"])
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "0.130%" in err[0]


def test_a_launch_series_records_counters_in_its_one_write(
        fake_bench: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With launches, the counters go into the merged document before it is written: the
    results file is written once, and carries provenance.tcp."""
    from mpilab import cli, fsutil

    env = fake_bench("ok")
    for k in ("MPILAB_BIN", "FAKE_BENCH_MODE", "FAKE_BENCH_ARGS"):
        monkeypatch.setenv(k, env[k])
    monkeypatch.chdir(tmp_path)
    reads = iter([{"OutSegs": 100, "RetransSegs": 1}, {"OutSegs": 1100, "RetransSegs": 2}])
    monkeypatch.setattr(tcpcount, "read", lambda nss: next(reads))
    writes: list[str] = []
    real = fsutil.atomic_write_text

    def counting(path: Any, text: str, *a: Any, **kw: Any) -> None:
        writes.append(Path(path).name)
        real(path, text, *a, **kw)

    monkeypatch.setattr(fsutil, "atomic_write_text", counting)
    monkeypatch.setattr(bench_cmd, "atomic_write_text", counting)
    assert cli.main(["bench", "--np", "1", "--launches", "2", "--quiet-launches", "--out",
                     "run.json", "--", "--ops", "scatter:linear", "--quiet"]) == 0
    assert writes.count("run.json") == 1
    tcp = results.read_raw(tmp_path / "run.json")["provenance"]["tcp"]
    assert (tcp["out_segs"], tcp["retrans_segs"]) == (1000, 1)
