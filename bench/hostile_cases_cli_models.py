"""The cases of bench/hostile_inputs.py, part three: commands and options (the OSU/IMB
aliases and --format csv of mpilab-bench, `mpilab --mpi`, --version on every subcommand,
`mpilab slurm`, `mpilab diff`, CSV reports) and the model parameters the reports must never
show as plain values: fitted intervals that no fit writes are refused; a fit below 0 is
shown as its clamp with the flag; an estimate at an end of its own interval is flagged.

A library of bench/ (hostile_inputs.py imports it), not a script."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from harness import BIN
from hostile_cases import PY, Case, Post, _good, _keep, _no_output, _write, report_case

SUBCOMMANDS = ("bench", "report", "survey", "selftest", "testbed", "pathmig", "wavefront",
               "disk", "compare", "multilane", "sim", "slurm", "tune", "diff")
MODEL_TABLES = ("summary-hockney", "summary-loggp", "hockney", "loggp-params")
SHOWN = "on show: "  # a post's finding that is a dubious accept, not a clobbered file
NEG = re.compile(r"^\s*[-\u2212]\s*\d")


def _with_fit() -> dict[str, Any]:
    """The campaign's good file with a robust fit's quality objects and a LogGP pair, as
    mpilab-bench --models writes them."""
    d = _good()
    for p in d["models"]["hockney"]["pairs"]:
        p["quality"] = {n: {"raw": p[n], "lo": 0.8 * p[n], "hi": 1.2 * p[n], "flags": []}
                        for n in ("alpha", "beta")}
    lg = {"i": 0, "j": 1, "L": 4e-6, "os": 5e-7, "or": 6e-7, "g": 1e-6, "G": 1e-9,
          "flags": [], "per_size": [{"bytes": 1, "rtt": 1e-5, "os": 5e-7, "or": 6e-7,
                                     "g": 1e-6}],
          "ranges": [{"from": 1, "to": 65536, "L": 4e-6, "os": 5e-7, "or": 6e-7, "g": 1e-6,
                      "G": 1e-9, "flags": []}]}
    lg["quality"] = {n: {"raw": lg[n], "lo": 0.9 * lg[n], "hi": 1.1 * lg[n], "flags": []}
                     for n in ("L", "os", "or", "g", "G")}
    d["models"]["loggp"] = {"pairs": [lg]}
    return d


def _fit(mut: Callable[[dict[str, Any]], None]) -> str:
    d = _with_fit()
    mut(d)
    return json.dumps(d, indent=1)


def _hq(d: dict[str, Any], n: str) -> dict[str, Any]:
    return d["models"]["hockney"]["pairs"][0]["quality"][n]


def _lq(d: dict[str, Any], n: str) -> dict[str, Any]:
    return d["models"]["loggp"]["pairs"][0]["quality"][n]


class _Cells(HTMLParser):
    """Cell texts and titles of the model tables of a report."""

    def __init__(self) -> None:
        super().__init__()
        self.table: str | None = None
        self.cell: list[str] | None = None
        self.title = ""
        self.cells: list[tuple[str, str, str]] = []  # (table id, text, title)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table" and a.get("id") in MODEL_TABLES:
            self.table = a.get("id")
        elif tag == "td" and self.table:
            self.cell, self.title = [], a.get("title") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.table = None
        elif tag == "td" and self.table and self.cell is not None:
            self.cells.append((self.table, "".join(self.cell), self.title))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def _shown(need: str) -> Post:
    """The report was written, no model table shows a negative number, and some model
    table cell carries the flag `need` in its hover (the clamp or the interval's edge)."""
    def post(d: Path) -> str | None:
        f = d / "out.html"
        if not f.exists():
            return None  # the exit status tells (the case expects success)
        p = _Cells()
        p.feed(f.read_text())
        neg = [(t, x) for t, x, _ in p.cells if NEG.match(x)]
        if neg:
            return f"{SHOWN}a model parameter shown as a negative value: {neg[:3]}"
        if not any(need in title for _, _, title in p.cells):
            return f"{SHOWN}no model table cell flagged {need!r}"
        return None
    return post


def model_cases() -> list[Case]:
    refused = {
        "hockney alpha interval upside down": _fit(lambda d: _hq(d, "alpha").update(
            lo=1e-5, hi=1e-6)),
        "hockney alpha interval below 0": _fit(lambda d: _hq(d, "alpha").update(lo=-1e-6)),
        "hockney alpha outside its interval": _fit(lambda d: _hq(d, "alpha").update(
            lo=1e-3, hi=2e-3)),
        "hockney beta interval below 0": _fit(lambda d: _hq(d, "beta").update(hi=-1e-12,
                                                                               lo=-2e-12)),
        "hockney beta outside its interval": _fit(lambda d: _hq(d, "beta").update(
            lo=1e-6, hi=2e-6)),
        "loggp g interval below 0": _fit(lambda d: _lq(d, "g").update(lo=-1e-7)),
        "loggp o_r interval upside down": _fit(lambda d: _lq(d, "or").update(lo=1e-6,
                                                                             hi=1e-7)),
        "loggp o_r outside its interval": _fit(lambda d: _lq(d, "or").update(lo=1e-3,
                                                                             hi=2e-3)),
        "loggp L interval below 0": _fit(lambda d: _lq(d, "L").update(hi=-1.0, lo=-2.0)),
        "loggp G outside its interval": _fit(lambda d: _lq(d, "G").update(lo=1.0, hi=2.0)),
        "loggp o_s negative headline inside a negative interval": _fit(
            lambda d: (d["models"]["loggp"]["pairs"][0].update(os=-5e-7),
                       _lq(d, "os").update(lo=-6e-7, hi=-4e-7))),
    }
    cases = [report_case(f"28 model: {n}", t) for n, t in refused.items()]

    def lg_range(d: dict[str, Any]) -> dict[str, Any]:
        return d["models"]["loggp"]["pairs"][0]["ranges"][0]

    def h_range(d: dict[str, Any]) -> dict[str, Any]:
        return d["models"]["hockney"]["pairs"][0]["ranges"][0]

    def clamped_alpha(d: dict[str, Any]) -> None:
        p = d["models"]["hockney"]["pairs"][0]
        p["alpha"] = 0.0
        _hq(d, "alpha").update(raw=-3e-7, lo=0.0, hi=2e-7, flags=["clamped"])

    def clamped_or(d: dict[str, Any]) -> None:
        d["models"]["loggp"]["pairs"][0]["or"] = 0.0
        _lq(d, "or").update(raw=-4.7e-7, lo=0.0, hi=1e-7, flags=["clamped"])

    def alpha_at_hi(d: dict[str, Any]) -> None:  # "5.01 us, 3.66 .. 5.01 us"
        p = d["models"]["hockney"]["pairs"][0]
        _hq(d, "alpha").update(lo=0.7 * p["alpha"], hi=p["alpha"])

    def l_at_lo(d: dict[str, Any]) -> None:
        p = d["models"]["loggp"]["pairs"][0]
        _lq(d, "L").update(lo=p["L"], hi=2 * p["L"])

    shown: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
        "loggp range o_r -471 ns": (lambda d: lg_range(d).update(**{"or": -4.71e-7}),
                                    "or_clamped"),
        "loggp range g -71.3 ns": (lambda d: lg_range(d).update(g=-7.13e-8), "g_clamped"),
        "loggp range o_s below 0": (lambda d: lg_range(d).update(os=-1e-8), "os_clamped"),
        "hockney range intercept below 0": (lambda d: h_range(d).update(
            alpha=-3.1e-7, flags=["negative_intercept"]), "clamped"),
        "hockney alpha clamped by the fit": (clamped_alpha, "clamped"),
        "loggp o_r clamped by the fit": (clamped_or, "clamped"),
        "hockney alpha at the top of its interval": (alpha_at_hi, "ci_edge"),
        "loggp L at the bottom of its interval": (l_at_lo, "ci_edge"),
    }
    for n, (mut, need) in shown.items():
        cases.append(Case(f"28 model shown: {n}", "C", PY + ["report", "r.json", "-o",
                                                             "out.html"],
                          setup=_write("r.json", _fit(mut)), post=_shown(need),
                          expect_ok=True))
    return cases


def _same(name: str, text: str) -> Post:
    def post(d: Path) -> str | None:
        p = d / name
        return None if p.is_file() and p.read_text() == text else f"{name} was changed"
    return post


def _no_csv(d: Path) -> str | None:
    return "out.csv written although the command failed" if (d / "out.csv").exists() else None


def command_cases() -> list[Case]:
    b = str(BIN / "mpilab-bench")
    t = json.dumps(_good(), indent=1)
    cases = [Case(f"28 mpilab {s} --version", "A", PY + [s, "--version"], expect_ok=True,
                  limit=60) for s in SUBCOMMANDS]
    bad_bench = [["-i", "0"], ["-i", "-5"], ["-i", "abc"], ["--iterations", "1e3"],
                 ["-x", "-1"], ["-x", "many"], ["-msglog", "31"], ["-msglog", "5:2"],
                 ["-msglog", "abc"], ["-msglog", "-1:4"], ["-npmin", "0"], ["-npmin", "x"],
                 ["--format", "json"], ["--format", ""], ["-i", "5", "--max-reps", "2"]]
    cases += [Case(f"28 mpilab-bench {' '.join(a)!r}", "A", [b, *a], limit=120)
              for a in bad_bench]
    cases += [
        Case("28 mpilab --mpi bogus bench", "A", PY + ["--mpi", "bogus", "bench", "--np", "2"],
             limit=60),
        Case("28 mpilab --mpi '' bench", "A", PY + ["--mpi", "", "bench"], limit=60),
        Case("28 MPILAB_BIN a missing folder", "A", PY + ["bench", "--np", "2", "--", "--ops",
                                                          "p2p", "--sizes", "1"],
             env={"MPILAB_BIN": "/nonexistent/mpilab-bin"}, limit=60),
        Case("28 MPILAB_BIN a file", "A", PY + ["bench", "--np", "2"],
             env={"MPILAB_BIN": "/etc/hostname"}, limit=60),
        Case("28 mpilab slurm bogus", "A", PY + ["slurm", "bogus"], limit=60),
        Case("28 mpilab slurm up --dir a file", "A", PY + ["slurm", "up", "--dir", "f"],
             setup=_write("f", "x"), post=_same("f", "x"), limit=60),
        Case("28 mpilab diff one missing file", "A", PY + ["diff", "r.json", "missing.json"],
             setup=_write("r.json", t), limit=60),
        Case("28 mpilab diff --fail-above -5", "A", PY + ["diff", "--fail-above", "-5",
                                                         "r.json", "r.json"],
             setup=_write("r.json", t), limit=60),
        Case("28 mpilab diff --fail-above nan", "A", PY + ["diff", "--fail-above", "nan",
                                                          "r.json", "r.json"],
             setup=_write("r.json", t), limit=60),
        Case("28 mpilab diff --html a directory", "A", PY + ["diff", "--html", "o", "r.json",
                                                            "r.json"],
             setup=lambda d: (_write("r.json", t)(d), (d / "o").mkdir()),
             post=_keep("o", "dir"), limit=60),
        Case("28 report --format xml", "C", PY + ["report", "r.json", "--format", "xml"],
             setup=_write("r.json", t), post=_no_output, limit=60),
        Case("28 report --format csv on a truncated file", "C",
             PY + ["report", "r.json", "--format", "csv", "-o", "out.csv"],
             setup=_write("r.json", t[: len(t) // 2]), post=_no_csv, limit=60),
        Case("28 report --format csv -o /dev/full", "C",
             PY + ["report", "r.json", "--format", "csv", "-o", "/dev/full"],
             setup=_write("r.json", t), limit=60),
        Case("28 report --format csv -o a directory", "C",
             PY + ["report", "r.json", "--format", "csv", "-o", "o"],
             setup=lambda d: (_write("r.json", t)(d), (d / "o").mkdir()),
             post=_keep("o", "dir"), limit=60),
        Case("28 report --format csv -o -", "C",
             PY + ["report", "r.json", "--format", "csv", "-o", "-"],
             setup=_write("r.json", t), expect_ok=True, limit=60),
    ]
    return cases


def cli_and_model_cases() -> list[Case]:
    return model_cases() + command_cases()
