"""Student t quantiles for the launch-level intervals (mpilab.launches, mpilab.launchvar),
apart from the merge: the default `mpilab bench` needs them before its launch starts, and
the merge's code only after."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

# Student t quantiles as scipy.stats.t computes them, for the confidence levels people ask
# for and df up to T_TABLE_DF, shipped with the package (data/t_quantiles.json, written by
# write_t_table and checked against scipy by the tests): importing scipy.stats costs a
# default `mpilab bench` more than its measurement on a small machine, so every other
# (cl, df) and every other distribution imports it only when asked.
T_TABLE_CL = (0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999)
T_TABLE_DF = 500
T_TABLE = Path(__file__).parent / "data" / "t_quantiles.json"


def _scipy_stats() -> Any:
    import scipy.stats

    return scipy.stats


@functools.cache
def _t_table() -> dict[float, list[float]]:
    try:
        doc = json.loads(T_TABLE.read_text())
        return {float(k): [float(x) for x in v] for k, v in doc["two_sided"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}  # a damaged installation: scipy answers every quantile


def write_t_table(path: Path = T_TABLE) -> None:
    """The shipped table from scipy.stats.t (two-sided quantiles by cl, df = 1..T_TABLE_DF)."""
    from mpilab.fsutil import atomic_write_text

    st = _scipy_stats()
    tab = {repr(cl): [float(st.t.isf((1 - cl) / 2, df)) for df in range(1, T_TABLE_DF + 1)]
           for cl in T_TABLE_CL}
    atomic_write_text(path, json.dumps({"source": "scipy.stats.t.isf((1 - cl) / 2, df)",
                                        "two_sided": tab}) + "\n")


def t_abs_cdf(t: float, df: int) -> float:
    """P(|T| < t) for Student's t with integer df >= 1 (scipy.stats.t)."""
    if df < 1:
        raise ValueError("df must be >= 1")
    if t <= 0:
        return 0.0
    return float(1.0 - 2.0 * _scipy_stats().t.sf(t, df))


def t_quantile(cl: float, df: int) -> float:
    """The t with P(|T| < t) = cl (two-sided; scipy.stats.t, through the shipped table where
    it has the value)."""
    if not 0 < cl < 1:
        raise ValueError("cl must be in (0, 1)")
    if df < 1:
        raise ValueError("df must be >= 1")
    row = _t_table().get(cl)
    if row is not None and df <= len(row):
        return row[df - 1]
    return float(_scipy_stats().t.isf((1 - cl) / 2, df))
