#!/usr/bin/env python3
"""Fuzz the results-JSON loader (mpilab.results.parse) and, optionally, the HTML report of
whatever it accepts: a deterministic mutation driver (seeded random, so a failure replays).

Seeds: tests/fuzz/corpus/results/*.json plus synthetic files from tests/python/conftest.py.
Mutations: on the text (bit flips, deleted/duplicated spans, tokens such as NaN, 1e400,
a 5000-digit integer, deep nesting, control characters) and on the document (a value at a
random JSON path replaced by a hostile one, a key deleted, a subtree copied elsewhere).

Invariant: parse() returns a Results, or raises MpilabError whose message is one line and
starts with the file name. Anything else (another exception class, a multi-line message) is
a failure: the input is saved and the run exits 1. With --render-every K every K-th
accepted input is also rendered (mpilab.report.render_report): it must not raise.

    python3 tests/fuzz/fuzz_results.py --iterations 300            # the CI run (pytest)
    python3 tests/fuzz/fuzz_results.py --seconds 600 --render-every 25 --seed 7   # long run
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "tests" / "python"))

from conftest import make_results  # noqa: E402
from mpilab import results  # noqa: E402
from mpilab.errors import MpilabError  # noqa: E402

NAME = "fuzz.json"
TOKENS = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "9" * 5000, "1" + "0" * 400,
          "-1", "0", "-0", "1.5", "1e-400", "null", "true", "false", "[]", "{}", '""',
          '"x"', "[" * 50 + "]" * 50, "[" * 5000, "\x00", "\n", "\t", '"\\ud800"', ",", ":",
          "\ufeff", '"p2p"', '"scatter"', "9223372036854775808", "2147483648", "4.2e9",
          "\u00b2", "\u0663"]
VALUES: list[Any] = [None, True, False, 0, -1, 1, 2, 3, 5, 2**31, 2**63, -(2**63) - 1,
                     10**30, 0.5, -0.5, 1e308, -1e-300, "", "x", "p2p", "max", [], {}, [1, 2],
                     [0, 0], [0, 7], {"a": 1}, [None], ["x"], 1e-9]


def seeds() -> list[str]:
    out = [p.read_text() for p in sorted((HERE / "corpus" / "results").glob("*.json"))]
    for ranks, sizes in ((2, (0, 1024)), (3, (1, 65536)), (4, (0,))):
        doc = make_results(ranks=ranks, sizes=sizes)
        out.append(json.dumps(doc, indent=1))
    return out


def _paths(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, path + (k,))
    elif isinstance(doc, list):
        for k, v in enumerate(doc):
            out += _paths(v, path + (k,))
    return out


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def mutate_doc(rng: random.Random, text: str) -> str:
    doc = json.loads(text)
    for _ in range(rng.randint(1, 3)):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        p = rng.choice(paths)
        parent = _get(doc, p[:-1])
        op = rng.random()
        if op < 0.6:
            parent[p[-1]] = copy.deepcopy(rng.choice(VALUES))
        elif op < 0.8:
            if isinstance(parent, dict):
                del parent[p[-1]]
            else:
                parent.pop(p[-1])
        else:
            q = rng.choice(paths)
            parent[p[-1]] = copy.deepcopy(_get(doc, q)) if len(q) < 4 else None
    return json.dumps(doc, indent=rng.choice([None, 1]))


def mutate_text(rng: random.Random, text: str) -> str:
    b = list(text)
    for _ in range(rng.randint(1, 6)):
        n = len(b)
        op = rng.random()
        pos = rng.randrange(n + 1)
        if op < 0.2 and n:
            i = rng.randrange(n)
            b[i] = chr(ord(b[i]) ^ (1 << rng.randrange(7)))
        elif op < 0.35 and n:
            j = min(n, pos + rng.randint(1, 40))
            del b[pos:j]
        elif op < 0.5 and n:
            j = min(n, pos + rng.randint(1, 200))
            b[pos:pos] = b[pos:j]
        else:
            # a token where a number or value starts, or anywhere
            starts = [i for i in range(max(0, pos - 200), min(n, pos + 200))
                      if b[i] in "-0123456789tfn\"[{"]
            at = rng.choice(starts) if starts and rng.random() < 0.8 else pos
            end = at
            while end < n and b[end] not in ",]}\n":
                end += 1
            b[at:end if rng.random() < 0.7 else at] = list(rng.choice(TOKENS))
    return "".join(b)


def check(text: str, render: bool | None) -> tuple[bool, str | None]:
    """(accepted, failure): failure None if the invariant holds, else a description.
    `render`: render an accepted input (None: render nothing)."""
    try:
        r = results.parse(text, NAME)
    except MpilabError as e:
        msg = str(e)
        if "\n" in msg or "\r" in msg or not msg.startswith(NAME):
            return False, f"MpilabError not one line naming the file: {msg!r}"
        return False, None
    except Exception:  # noqa: BLE001 - any other exception is the finding
        return False, traceback.format_exc()
    if render:
        from mpilab.report import render_report
        try:
            render_report(r)
        except Exception:  # noqa: BLE001
            return True, traceback.format_exc()
    return True, None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--render-every", type=int, default=0,
                    help="render every K-th accepted input (0: never)")
    ap.add_argument("--failures", default="fuzz-results-failures",
                    help="folder for failing inputs")
    a = ap.parse_args(argv)
    if a.iterations <= 0 and a.seconds <= 0:
        ap.error("give --iterations or --seconds")
    rng = random.Random(a.seed)
    pool = seeds()
    for s in pool:
        _, bad = check(s, False)
        if bad:
            sys.stderr.write(f"seed rejected by the invariant:\n{bad}\n")
            return 1
    start = time.monotonic()
    n = accepted = rendered = 0
    while (a.iterations <= 0 or n < a.iterations) and \
            (a.seconds <= 0 or time.monotonic() - start < a.seconds):
        base = rng.choice(pool)
        text = mutate_doc(rng, base) if rng.random() < 0.5 else mutate_text(rng, base)
        n += 1
        # render the K-th accepted input: the next accepted one once `accepted` is due
        render = a.render_every > 0 and (accepted + 1) % a.render_every == 0
        ok, bad = check(text, render)  # one parse per input
        accepted += ok
        rendered += ok and render
        if bad:
            out = Path(a.failures)
            out.mkdir(parents=True, exist_ok=True)
            f = out / f"seed{a.seed}-iter{n}.json"
            f.write_text(text)
            sys.stderr.write(f"fuzz_results: failure at iteration {n} (input saved in {f}):\n"
                             f"{bad}\n")
            return 1
    print(f"fuzz_results: {n} inputs ({accepted} accepted, {rendered} rendered) in "
          f"{time.monotonic() - start:.1f} s, seed {a.seed}: no invariant failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
