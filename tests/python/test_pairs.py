"""Sampled pair design: coverage, size, and the fit finding an injected slow node and link."""
from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from mpilab.pairs import compare_sampled, default_design, fit_pairs, full_pairs, main, sample_pairs

NODE = 5e-6          # every node's share of a pair time
SLOW_NODE = 4e-6     # extra for the injected slow node
SWITCH = 2e-6        # crossing two switches
SLOW_LINK = 6e-6     # extra on the injected slow link


def synth(pairs: list[tuple[int, int]], groups: list[int] | None, slow_node: int | None,
          slow_link: tuple[int, int] | None, slow_pair: tuple[int, int] | None = None,
          noise: float = 0.02, seed: int = 1) -> dict[tuple[int, int], float]:
    rng = random.Random(seed)
    out = {}
    for i, j in pairs:
        t = 2 * NODE + (SLOW_NODE if slow_node in (i, j) else 0.0)
        if groups is not None and groups[i] != groups[j]:
            t += SWITCH
            if slow_link is not None and {groups[i], groups[j]} == set(slow_link):
                t += SLOW_LINK
        if slow_pair == (i, j):
            t += SLOW_LINK
        out[(i, j)] = t * (1.0 + rng.uniform(-noise, noise))
    return out


@pytest.mark.parametrize("p", [3, 8, 9, 64, 256])
def test_design_covers_every_node_and_boundary(p: int) -> None:
    groups = [r * 4 // p for r in range(p)]
    d = sample_pairs(p, groups)
    assert len(set(d)) == len(d) and all(0 <= i < j < p for i, j in d)
    deg = [0] * p
    for i, j in d:
        deg[i] += 1
        deg[j] += 1
    assert min(deg) >= 2
    crossed = {(groups[i], groups[j]) for i, j in d if groups[i] != groups[j]}
    need = {(a, b) for a in set(groups) for b in set(groups) if a < b}
    assert crossed == need
    # O(p log p): ring + triangle + log2 p matchings + two per boundary
    assert len(d) <= p + 1 + math.ceil(math.log2(p)) * (p // 2) + 2 * len(need)
    if p == 256:
        assert len(d) < len(full_pairs(p)) / 10


def test_sampled_finds_slow_node_and_link_like_full() -> None:
    p = 32
    groups = [r // 8 for r in range(p)]
    slow_node, slow_link = 13, (1, 3)
    fits = {}
    for name, design in (("full", full_pairs(p)), ("sampled", sample_pairs(p, groups, seed=4))):
        f = fit_pairs(synth(design, groups, slow_node, slow_link), p, groups)
        assert f.slow_nodes == [slow_node], name
        assert f.slow_links == [slow_link], name
        assert f.nodes[slow_node] == pytest.approx(NODE + SLOW_NODE, rel=0.1)
        assert f.links[slow_link] == pytest.approx(SWITCH + SLOW_LINK, rel=0.1)
        fits[name] = f
    for i in range(p):
        assert fits["sampled"].nodes[i] == pytest.approx(fits["full"].nodes[i], rel=0.1)


def test_no_injection_flags_nothing() -> None:
    p = 32
    groups = [r // 8 for r in range(p)]
    f = fit_pairs(synth(sample_pairs(p, groups), groups, None, None), p, groups)
    assert f.slow_nodes == [] and f.slow_links == [] and f.slow_pairs == []


def test_slow_pair_without_groups() -> None:
    p = 16
    d = sample_pairs(p)
    bad = d[len(d) // 2]
    f = fit_pairs(synth(d, None, None, None, slow_pair=bad), p)
    assert f.slow_pairs == [bad]
    assert f.slow_nodes == []


def test_design_that_cannot_determine_nodes() -> None:
    with pytest.raises(ValueError, match="does not determine"):
        fit_pairs({(0, 1): 1.0, (2, 3): 1.0}, 4)          # disconnected
    with pytest.raises(ValueError, match="does not determine"):
        fit_pairs({(0, 1): 1.0, (1, 2): 1.0, (2, 3): 1.0, (0, 3): 1.0}, 4)   # bipartite
    with pytest.raises(ValueError, match="not two different ranks"):
        fit_pairs({(0, 0): 1.0}, 4)
    with pytest.raises(ValueError):
        sample_pairs(2)


def test_default_design() -> None:
    assert default_design(8) == "full"
    assert default_design(65) == "sampled"
    assert default_design(256, "full") == "full"
    with pytest.raises(ValueError, match="full or sampled"):
        default_design(8, "some")


def test_compare_sampled_on_full_matrix() -> None:
    p = 24
    groups = [r // 6 for r in range(p)]
    full, sampled, worst = compare_sampled(synth(full_pairs(p), groups, 5, (0, 2)), p, groups)
    assert worst < 0.1
    assert full.slow_nodes == sampled.slow_nodes == [5]


def test_cli_rejects_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert main([str(tmp_path / "x.json"), "many"]) == 2
    assert "BYTES must be an integer" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.json")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "missing.json" in err
