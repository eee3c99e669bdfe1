"""Quality flags, the summary, the noisy-run verdict and the scan for unflagged impossible
values (mpilab.quality), on synthetic documents."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mpilab import quality


def test_honest_synthetic_document_has_no_problems(
        synthetic_results: Callable[..., dict[str, Any]]) -> None:
    doc = synthetic_results(ranks=2, sizes=(0, 1024))
    assert quality.unflagged_problems(doc) == []
    s = quality.summary(doc)
    assert s["measurements"] == len(doc["measurements"]) and s["converged"] == s["measurements"]
    assert quality.noisy_verdict(doc) is None and not s["partial"]


def test_negative_values_are_caught_unless_flagged(
        synthetic_results: Callable[..., dict[str, Any]]) -> None:
    doc = synthetic_results(ranks=2, sizes=(0, 1024))
    m = doc["measurements"][0]
    bad = copy.deepcopy(doc)
    bad["measurements"][0]["stats"]["median"] = -1e-6
    bad["measurements"][0]["samples"][0] = -2e-6
    bad["models"]["hockney"]["pairs"][0]["beta"] = -1e-10
    bad["models"]["predictions"][0]["predicted"] = -3e-6
    probs = quality.unflagged_problems(bad)
    assert any("stats.median" in p for p in probs)
    assert any("samples[0]" in p for p in probs)
    assert any("beta" in p and "without a flag" in p for p in probs)
    assert any("predicted" in p for p in probs)
    # the same values, flagged: a negative corrected time excluded as invalid, a clamped beta
    ok = copy.deepcopy(bad)
    ok["measurements"][0]["flags"] = ["negative_time"]
    ok["measurements"][0]["valid"][0] = False
    ok["models"]["hockney"]["pairs"][0]["quality"] = {"beta": {"flags": ["clamped"]}}
    ok["models"]["predictions"][0]["predicted"] = 3e-6
    assert quality.unflagged_problems(ok) == []
    assert m["stats"]["median"] > 0  # the fixture itself was untouched


def test_summary_and_noisy_verdict(synthetic_results: Callable[..., dict[str, Any]]) -> None:
    doc = synthetic_results(ranks=2, sizes=(0, 1024, 4096))
    for k, m in enumerate(doc["measurements"]):
        m["stats"]["converged"] = k % 4 == 0
    m0 = doc["measurements"][1]
    m0["stats"]["invalid"] = 2
    doc["partial"] = True
    doc["partial_reason"] = "interrupted"
    doc["models"]["hockney"]["pairs"][0]["quality"] = {
        "alpha": {"raw": -1e-7, "lo": 0, "hi": 1e-7, "flags": ["clamped", "ci_wide"]}}
    s = quality.summary(doc)
    assert s["partial"] and s["partial_reason"] == "interrupted"
    assert s["flags"]["not_converged"] == s["measurements"] - s["converged"]
    assert s["flags"]["invalid_samples"] >= 1
    assert any("alpha: clamped,ci_wide" in p for p in s["params"])
    v = quality.noisy_verdict(doc)
    assert v is not None and "\n" not in v and "--time-budget" in v
    assert f"only {s['converged']} of {s['measurements']}" in v


def _noisy(synthetic_results: Callable[..., dict[str, Any]], bound: bool, local: int,
           cpus: int) -> dict[str, Any]:
    doc = synthetic_results(ranks=local, sizes=(0, 1024, 4096))
    for m in doc["measurements"]:
        m["stats"]["converged"] = False
        m["precision"] = {"cl": 0.95, "eps": 0.025, "min_reps": 5, "max_reps": 1000000}
    doc["provenance"]["mapping"] = [{"rank": r, "host": "n0", "bound": bound} for r in range(local)]
    doc["provenance"]["placement"] = {"local_ranks": local, "node_cpus": cpus, "pinned": False}
    return doc


def test_noisy_verdict_reads_provenance(synthetic_results: Callable[..., dict[str, Any]]) -> None:
    pinned = quality.noisy_verdict(_noisy(synthetic_results, True, 2, 2))
    assert pinned is not None and "--bind-to core" not in pinned
    assert "oversubscription" not in pinned
    loose = quality.noisy_verdict(_noisy(synthetic_results, False, 2, 2))
    assert loose is not None and "--bind-to core" in loose
    over = quality.noisy_verdict(_noisy(synthetic_results, True, 4, 2))
    assert over is not None and "4 ranks share 2 CPUs" in over and "oversubscription" in over
    # unbound but oversubscribed: no pinning advice (4 ranks cannot each have a core of 2)
    over = quality.noisy_verdict(_noisy(synthetic_results, False, 4, 2))
    assert over is not None and "--bind-to core" not in over and "fewer ranks per node" in over


def test_noisy_verdict_names_launches_that_disagree(
        synthetic_results: Callable[..., dict[str, Any]]) -> None:
    """Measurements over launches that each converged but whose levels differ: the verdict
    says so (a longer budget per launch would not help); launches of which one did not
    converge, or a single launch, are not counted."""
    doc = _noisy(synthetic_results, True, 2, 2)
    ms = doc["measurements"]
    assert len(ms) >= 3
    ms[0]["launches"] = {"n": 3, "converged": [True, True, True]}
    ms[1]["launches"] = {"n": 3, "converged": [True, False, True]}
    ms[2]["launches"] = {"n": 1, "converged": [True]}
    s = quality.summary(doc)
    assert s["launch_only"] == 1
    v = quality.noisy_verdict(doc, s)
    assert v is not None and f"1 of the {len(ms)} others converged in each launch alone" in v
    # a minority of the others: a larger budget is still the first advice
    assert "--time-budget" in v and "more launches" not in v
    many = copy.deepcopy(doc)  # now every measurement converged in each of its 3 launches
    for m in many["measurements"]:
        m["launches"] = {"n": 3, "converged": [True, True, True]}
    v = quality.noisy_verdict(many)
    assert v is not None and "more launches (--launches, more than 3)" in v
    assert "--time-budget" not in v
    ms[0]["launches"]["converged"][2] = False
    v = quality.noisy_verdict(doc)
    assert v is not None and "each launch alone" not in v


def test_quick_run_is_not_called_noisy(synthetic_results: Callable[..., dict[str, Any]]) -> None:
    doc = _noisy(synthetic_results, True, 2, 2)
    for m in doc["measurements"]:
        m["precision"] = {"cl": 0.95, "eps": 0.5, "min_reps": 2, "max_reps": 3}
    assert quality.noisy_verdict(doc) is None
    note = quality.quick_note(doc)
    assert note is not None and "by design" in note
    assert quality.quick_note(_noisy(synthetic_results, True, 2, 2)) is None


def test_module_cli_exit_status(synthetic_results: Callable[..., dict[str, Any]],
                                tmp_path: Path) -> None:
    good = synthetic_results(ranks=2, sizes=(0,))
    p = tmp_path / "good.json"
    p.write_text(json.dumps(good))
    assert quality.main([str(p)]) == 0
    bad = copy.deepcopy(good)
    bad["models"]["hockney"]["pairs"][0]["alpha"] = -5e-6
    q = tmp_path / "bad.jsonx"  # not *.json: the session scan must not see it
    q.write_text(json.dumps(bad))
    assert quality.main([str(q)]) == 1
    (tmp_path / "broken.txt").write_text("{")
    assert quality.main([str(tmp_path / "broken.txt")]) == 2


def test_lmo_prediction_at_or_below_zero_needs_its_flag(
        synthetic_results: Callable[..., dict[str, Any]]) -> None:
    doc = synthetic_results(ranks=3, sizes=(1024,))
    pred = {"op": "scatter", "impl": "linear", "bytes": 1024, "predicted": -1e-6}
    doc["models"]["lmo"] = {"predictions": [pred]}
    assert any("models.lmo.predictions[0]" in p for p in quality.unflagged_problems(doc))
    pred["flags"] = ["nonpositive"]
    assert quality.unflagged_problems(doc) == []
    pred["predicted"] = 0.0
    del pred["flags"]
    assert any("models.lmo.predictions[0]" in p for p in quality.unflagged_problems(doc))
