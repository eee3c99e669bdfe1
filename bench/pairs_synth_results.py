#!/usr/bin/env python3
"""Write a results file of about N p2p measurements for report-at-scale measurements: the
first p2p measurement of TEMPLATE (a real run's results) copied to every pair of the
smallest rank count P with P(P-1)/2 >= N, medians drawn around the template's.

    python3 bench/pairs_synth_results.py TEMPLATE.json N OUT.json
"""
from __future__ import annotations

import copy
import json
import math
import random
import sys

from harness import write_json


def main() -> int:
    if len(sys.argv) != 4 or not sys.argv[2].isdigit() or int(sys.argv[2]) < 1:
        print("usage: pairs_synth_results.py TEMPLATE.json N OUT.json", file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    tmpl = next((m for m in doc["measurements"] if m.get("op") == "p2p"), None)
    if tmpl is None:
        print(f"pairs_synth_results.py: {sys.argv[1]}: no p2p measurement", file=sys.stderr)
        return 1
    n = int(sys.argv[2])
    p = math.ceil((1 + math.sqrt(1 + 8 * n)) / 2)
    rng = random.Random(1)
    ms = []
    for i in range(p):
        for j in range(i + 1, p):
            if len(ms) == n:
                break
            m = copy.deepcopy(tmpl)
            m["pair"] = [i, j]
            m["ranks"] = p
            k = rng.uniform(0.9, 1.1)
            m["samples"] = [s * k for s in m["samples"]]
            for key in ("median", "mean", "min", "max"):
                if isinstance(m["stats"].get(key), float):
                    m["stats"][key] *= k
            ms.append(m)
    doc["measurements"] = ms
    doc.pop("models", None)
    write_json(sys.argv[3], doc, indent=None, newline=False)
    print(f"{len(ms)} measurements of {p} ranks -> {sys.argv[3]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
