#!/usr/bin/env python3
"""Fuzz the spec-file readers (testbed specs: mpilab.testbed.spec.load_text; disk specs:
mpilab.disk.spec.load_text): a deterministic mutation driver (seeded random, so a failure
replays) over the example specs in examples/testbed and examples/disk.

Mutations on the text: a number replaced by a huge one (5000 digits, 1e308, 10^30, -1, 0,
Unicode digits), a value replaced by deep nesting ([[[...]]] or {a={a=...}} up to 5000
deep), a string value replaced by a hostile one (control characters, '1bit', empty), a
line duplicated (a key or a [[table]] twice), deleted, or cut in half, bytes flipped.

Invariant: load_text returns a spec or raises MpilabError whose message is one line and
starts with the source name. Anything else (another exception: ValueError of the digit
limit, RecursionError, ...; a multi-line message) is a failure: the input is saved under
tests/fuzz/findings/ and the run exits 1.

    python3 tests/fuzz/fuzz_specs.py --iterations 500          # a short run (pytest runs 200)
    python3 tests/fuzz/fuzz_specs.py --seconds 600 --seed 7     # a long run
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "python"))

from mpilab.disk import spec as diskspec  # noqa: E402
from mpilab.errors import MpilabError  # noqa: E402
from mpilab.testbed import spec as tbspec  # noqa: E402

NAME = "fuzz.toml"
HUGE = ["9" * 5000, "1e308", "1" + "0" * 30, "-1", "0", "\u0663", "1_000_000_000_000",
        "0x7fffffffffffffff", "inf", "nan", "1e-320"]
STRINGS = ['"1bit"', '""', '"\\u0000"', '"a\\u001bb"', '"99999999999999999999Gbit"',
           '"5e999ms"', '" 5ms"', '"' + "x" * 10000 + '"']
_NUM = re.compile(r"(?<![\w.])-?\d[\d_]*(\.\d+)?")
_VAL = re.compile(r"=\s*(.+)$", re.M)


def _nest(rng: random.Random) -> str:
    depth = rng.choice([10, 100, 999, 1001, 5000])
    if rng.random() < 0.5:
        return "[" * depth + "]" * depth
    return "{a=" * depth + "1" + "}" * depth


def _mutate(text: str, rng: random.Random) -> str:
    k = rng.randrange(7)
    lines = text.splitlines()
    if k == 0:
        nums = list(_NUM.finditer(text))
        if nums:
            m = rng.choice(nums)
            return text[:m.start()] + rng.choice(HUGE) + text[m.end():]
    if k == 1:
        vals = list(_VAL.finditer(text))
        if vals:
            m = rng.choice(vals)
            return text[:m.start(1)] + _nest(rng) + text[m.end(1):]
    if k == 2:
        vals = [m for m in _VAL.finditer(text) if m.group(1).startswith('"')]
        if vals:
            m = rng.choice(vals)
            return text[:m.start(1)] + rng.choice(STRINGS) + text[m.end(1):]
    if k == 3 and lines:
        i = rng.randrange(len(lines))
        j = i
        while j + 1 < len(lines) and not lines[j + 1].startswith("["):
            j += 1
        return "\n".join(lines[:j + 1] + lines[i:j + 1] + lines[j + 1:])  # a block twice
    if k == 4 and lines:
        i = rng.randrange(len(lines))
        return "\n".join(lines[:i] + lines[i + 1:])
    if k == 5 and text:
        i = rng.randrange(len(text))
        return text[:i]
    b = bytearray(text.encode())
    for _ in range(rng.randint(1, 4)):
        if b:
            b[rng.randrange(len(b))] = rng.randrange(256)
    return b.decode("utf-8", "replace")


def check(loader: Callable[[str, str], Any], text: str) -> str | None:
    """None if the invariant holds, else what broke it."""
    try:
        loader(text, NAME)
    except MpilabError as e:
        msg = str(e)
        if "\n" in msg or not msg.startswith(NAME):
            return f"MpilabError not one line naming the file: {msg[:300]!r}"
    except Exception:  # noqa: BLE001 - any other exception is the finding
        return traceback.format_exc(limit=3)
    return None


def seeds() -> list[tuple[str, Callable[[str, str], Any], str]]:
    out: list[tuple[str, Callable[[str, str], Any], str]] = [
        ("testbed default", lambda t, n: tbspec.load_text(t, n, "fz"), tbspec.DEFAULT_SPEC)]
    for p in sorted((REPO / "examples" / "testbed").glob("*.toml")):
        out.append((p.name, lambda t, n: tbspec.load_text(t, n, "fz"), p.read_text()))
    for p in sorted((REPO / "examples" / "disk").glob("*.toml")):
        out.append((p.name, lambda t, n: diskspec.load_text(t, n, "fz"), p.read_text()))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=500)
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    rng = random.Random(a.seed)
    pool = seeds()
    t0 = time.monotonic()
    n = accepted = 0
    while (a.seconds is not None and time.monotonic() - t0 < a.seconds) or \
            (a.seconds is None and n < a.iterations):
        name, loader, text = rng.choice(pool)
        for _ in range(rng.randint(1, 3)):
            text = _mutate(text, rng)
        bad = check(loader, text)
        n += 1
        if bad is None:
            try:
                loader(text, NAME)
                accepted += 1
            except MpilabError:
                pass
            continue
        out = HERE / "findings" / f"spec-seed{a.seed}-{n}.toml"
        out.parent.mkdir(exist_ok=True)
        out.write_text(text)
        sys.stderr.write(f"fuzz_specs: {name}, input {n}: {bad}\ninput saved: {out}\n")
        return 1
    print(f"fuzz_specs: {n} inputs in {time.monotonic() - t0:.1f} s ({accepted} accepted), "
          "0 failures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
