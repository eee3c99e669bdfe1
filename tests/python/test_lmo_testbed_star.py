"""bench/lmo_testbed.py's star comparison: the pings decomposed like the fit (a_i + a_j), and
the fit's star view (models.lmo.star) against the testbed's access links, the slowest access
link named right or said to be wrong."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import lmo_testbed  # noqa: E402

D = [1e-3, 2e-3, 3e-3, 4e-3]  # lmo-hetero4's delays
U = [8 / r * 1514 / 1448 for r in (100e6, 100e6, 50e6, 25e6)]


def _cf() -> dict[str, Any]:
    return {"delay_s": D, "own_inv_rate": U}


def _ind(extra: float) -> dict[str, Any]:
    return {"ping": {f"{i}-{j}": D[i] + D[j] + extra for i in range(4) for j in range(i + 1, 4)}}


def test_pair_shares_solve_a_star_exactly() -> None:
    a = [0.5, 1.0, 1.5, 2.0]
    y = {(i, j): a[i] + a[j] for i in range(4) for j in range(i + 1, 4)}
    assert lmo_testbed._pair_shares(4, y) == pytest.approx(a, abs=1e-12)
    # a constant added to every pair is shared equally
    y2 = {k: v + 0.2 for k, v in y.items()}
    assert lmo_testbed._pair_shares(4, y2) == pytest.approx([x + 0.1 for x in a], abs=1e-12)


def test_star_table_exact_fit(capsys: pytest.CaptureFixture[str]) -> None:
    lm = {"bytes": 262144, "star": {"latency_s": [d / 2 for d in D], "inv_rate": U,
                                    "misfit_latency": 0.0, "misfit_inv_rate": 0.0,
                                    "slowest_link_of": 3, "slowest_vs_median": 2.7}}
    st = lmo_testbed.star_table(lm, _cf(), _ind(100e-6))
    assert st["a_max_err_conf"] == pytest.approx(0, abs=1e-12)
    assert st["u_max_err"] == pytest.approx(0, abs=1e-12)
    # the pings carry 100 us more per round trip: 25 us more per node's share
    assert [r["a_ping"] for r in st["rows"]] == pytest.approx([d / 2 + 25e-6 for d in D])
    assert st["named"] == st["configured"] == 3
    assert "(correct)" in capsys.readouterr().out


def test_star_table_says_a_wrong_name(capsys: pytest.CaptureFixture[str]) -> None:
    lm = {"bytes": 262144, "star": {"latency_s": [d / 2 * 1.1 for d in D], "inv_rate": U,
                                    "misfit_latency": 0.01, "misfit_inv_rate": 0.02,
                                    "slowest_link_of": 2, "slowest_vs_median": 1.3}}
    st = lmo_testbed.star_table(lm, _cf(), _ind(0.0))
    assert st["a_max_err_conf"] == pytest.approx(0.1)
    assert st["named"] == 2 and st["configured"] == 3
    assert "WRONG" in capsys.readouterr().out


def test_star_table_without_a_star_view(capsys: pytest.CaptureFixture[str]) -> None:
    assert lmo_testbed.star_table({"bytes": 1}, _cf(), _ind(0.0)) == {}
    assert "no star view" in capsys.readouterr().out


def _nodes(cs: list[float]) -> list[dict[str, Any]]:
    return [{"rank": r, "C": {"value": c, "raw": c, "flags": []}} for r, c in enumerate(cs)]


def test_quota_stretch() -> None:
    # 1 ms of runtime every 4 ms: 1.5 ms of CPU waits out 3 ms once (or twice, starting
    # throttled); 0.5 ms fits in one period's runtime
    assert lmo_testbed.quota_stretch(1.5e-3, 0.25, 4e-3) == pytest.approx((4.5e-3, 7.5e-3))
    assert lmo_testbed.quota_stretch(0.5e-3, 0.25, 4e-3) == pytest.approx((0.5e-3, 3.5e-3))
    assert lmo_testbed.quota_stretch(1e-3, 0.25, 4e-3) == pytest.approx((1e-3, 4e-3))


def test_cost_table_against_configured(capsys: pytest.CaptureFixture[str]) -> None:
    # lmo-hetero4-cost: nodes 1 (quota) and 2 spend 1.5 ms per message, 0 and 3 nothing
    cf = {"msg_cost": {1: 1.5e-3, 2: 1.5e-3},
          "cpu": {1: {"name": "s1n0", "cpu_quota": 0.25, "cpu_period": 4e-3}}}
    lm = {"nodes": _nodes([40e-6, 5.0e-3, 1.62e-3, 60e-6]),
          "slowest": {"cpu": 1, "cpu_vs_median": 4.5}}
    ct = lmo_testbed.cost_table(lm, cf)
    assert ct["baseline_C"] == pytest.approx(50e-6)
    r1, r2 = ct["rows"]
    assert r2["C_conf_lo"] == pytest.approx(1.55e-3) and r2["err"] == pytest.approx(0.07 / 1.55)
    assert (r1["C_conf_lo"], r1["C_conf_hi"]) == pytest.approx((4.55e-3, 7.55e-3))
    assert r1["err"] is None  # a range, not a value
    assert ct["named_cpu"] == 1 and ct["limited"] == [1]
    out = capsys.readouterr().out
    assert "CPU-limited node(s) [1]: named" in out
    s = lmo_testbed.summary({"links": [{"L": 1.0, "L_conf": 1.0, "L_ping": None,
                                        "path_inv_beta": None, "path_conf": 1.0}],
                             "predictions": [], "cost": ct})
    assert s["C_max_err_conf"] == pytest.approx(0.07 / 1.55) and s["cpu_named"] is True
    # another node named: said
    lm["slowest"]["cpu"] = 2
    assert lmo_testbed.cost_table(lm, cf)["named_cpu"] == 2
    assert "NOT named" in capsys.readouterr().out


def test_cost_table_every_node_with_a_wall_cost(capsys: pytest.CaptureFixture[str]) -> None:
    # lmo-hetero4-wall: every node has a wall-clock cost (2, 4, 2.5, 3 ms), none a quota:
    # no node gives the MPI's own C, so each is compared with its msg_cost alone, and the
    # node named slowest at messaging with the largest cost
    cf = {"msg_cost": {0: 2e-3, 1: 4e-3, 2: 2.5e-3, 3: 3e-3}, "msg_cost_wall": [0, 1, 2, 3],
          "cpu": {}}
    lm = {"nodes": _nodes([2.05e-3, 4.3e-3, 2.5e-3, 2.9e-3]),
          "slowest": {"cpu": 1, "cpu_vs_median": 1.6}}
    ct = lmo_testbed.cost_table(lm, cf)
    assert ct["baseline_C"] is None and ct["largest_cost"] == 1
    assert [r["clock"] for r in ct["rows"]] == ["wall"] * 4
    assert [r["err"] for r in ct["rows"]] == pytest.approx([0.025, 0.075, 0.0, -0.1 / 3])
    out = capsys.readouterr().out
    assert "largest configured cost: node 1: named" in out and "is not added" in out
    s = lmo_testbed.summary({"links": [{"L": 1.0, "L_conf": 1.0, "L_ping": None,
                                        "path_inv_beta": None, "path_conf": 1.0}],
                             "predictions": [], "cost": ct})
    assert s["C_max_err_conf"] == pytest.approx(0.075) and s["cost_named"] is True
    lm["slowest"]["cpu"] = 3
    assert lmo_testbed.summary({"links": [{"L": 1.0, "L_conf": 1.0, "L_ping": None,
                                           "path_inv_beta": None, "path_conf": 1.0}],
                                "predictions": [],
                                "cost": lmo_testbed.cost_table(lm, cf)})["cost_named"] is False


def test_strip_msg_costs_keeps_quotas() -> None:
    from mpilab.testbed import spec as specmod
    for name, quota in (("lmo-hetero4-wall.toml", []), ("lmo-hetero4-cost.toml", ["s1n0"])):
        text = (REPO / "examples" / "testbed" / name).read_text()
        sp = specmod.load_text(lmo_testbed.strip_msg_costs(text), name)
        assert sp.msg_costs == {} and sp.msg_cost_wall == []
        assert [lim.name for lim in sp.node_limits] == quota
        full = specmod.load_text(text, name)
        assert sp.link_rates("s3n0", 0) == full.link_rates("s3n0", 0)
        assert [sp.node_delay(n, 0) for n in sp.node_names()] == \
            [full.node_delay(n, 0) for n in full.node_names()]


def test_cost_table_with_a_measured_baseline(capsys: pytest.CaptureFixture[str]) -> None:
    cf = {"msg_cost": {0: 2e-3, 1: 4e-3}, "msg_cost_wall": [0, 1], "cpu": {}}
    lm = {"nodes": _nodes([2.1e-3, 4.05e-3]), "slowest": {"cpu": 1, "cpu_vs_median": 1.3}}
    ct = lmo_testbed.cost_table(lm, cf, baseline=50e-6)
    assert ct["baseline_C"] == 50e-6
    assert [r["err"] for r in ct["rows"]] == pytest.approx([0.05 / 2.05, 0.0])
    assert "--baseline-c" in capsys.readouterr().out


def test_star_table_with_message_costs(capsys: pytest.CaptureFixture[str]) -> None:
    # node 2's share holds its 1.5 ms per message; node 1's (quota and cost) is not compared
    cf = {**_cf(), "msg_cost": {1: 1.5e-3, 2: 1.5e-3},
          "cpu": {1: {"name": "s1n0", "cpu_quota": 0.25, "cpu_period": 4e-3}}}
    a = [D[0] / 2, D[1] / 2 + 5e-3, D[2] / 2 + 1.5e-3 * 1.02, D[3] / 2]
    lm = {"bytes": 262144, "star": {"latency_s": a, "inv_rate": U, "misfit_latency": 0.0,
                                    "misfit_inv_rate": 0.0, "slowest_link_of": 3,
                                    "slowest_vs_median": 2.7}}
    st = lmo_testbed.star_table(lm, cf, _ind(0.0))
    assert st["rows"][2]["a_conf"] == pytest.approx(D[2] / 2 + 1.5e-3)
    assert st["a_max_err_conf"] == pytest.approx(0.03e-3 / 3e-3)
    assert st["a_max_err_ping"] == pytest.approx(0, abs=1e-12)  # nodes 0 and 3 only
    assert "not compared" in capsys.readouterr().out
