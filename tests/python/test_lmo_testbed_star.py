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
