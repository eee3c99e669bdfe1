#!/usr/bin/env python3
"""Every results file (`mpilab.results/1`) ever committed to this repository, each version
of it (`git log --all`: files the tools wrote at the time, since removed or rewritten
included), added to one fresh history with `mpilab.history.db.add_file`: how many were
imported, and the one-line reason of each that was not (docs/history.md).

Usage: python3 bench/history_git_import.py [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import harness
from harness import write_json

harness.test_helpers()
from mpilab import fsutil  # noqa: E402
from mpilab.errors import MpilabError  # noqa: E402
from mpilab.history import db  # noqa: E402

REPO = harness.REPO


def _git(*args: str) -> bytes:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, check=True,
                          timeout=300).stdout


def results_blobs() -> list[dict[str, Any]]:
    """(date, commit, path, blob) of every distinct results-file version, oldest first."""
    log = _git("log", "--all", "--reverse", "--format=C %h %ad", "--date=short",
               "--diff-filter=AM", "--name-only", "--", "*.json").decode()
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    commit, date = "", ""
    for line in log.splitlines():
        if line.startswith("C "):
            _, commit, date = line.split()
            continue
        if not line.strip():
            continue
        blob = _git("rev-parse", f"{commit}:{line}").decode().strip()
        if blob in seen:
            continue
        seen.add(blob)
        try:
            doc = json.loads(_git("cat-file", "-p", blob))
        except ValueError:
            continue
        if isinstance(doc, dict) and doc.get("schema") == "mpilab.results/1":
            out.append({"date": date, "commit": commit, "path": line, "blob": blob})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the figures as JSON")
    a = ap.parse_args()
    held = None
    if a.out is not None:
        # an output that could not be written is refused before minutes of git reading (a
        # FIFO's write end is held open until the figures are written)
        if not a.out:
            ap.error("--out: empty file name")
        try:
            fsutil.check_output(a.out)
            held = fsutil.hold_fifo(a.out)
        except MpilabError as e:
            print(f"history_git_import.py: {e}", file=sys.stderr)
            return 2
    rows = results_blobs()
    with tempfile.TemporaryDirectory(prefix="history-git-") as d:
        c = db.connect(Path(d) / "h.sqlite")
        for r in rows:
            f = Path(d) / f"{r['blob']}.json"
            f.write_bytes(_git("cat-file", "-p", r["blob"]))
            try:
                _, _, r["points"] = db.add_file(c, str(f))
            except MpilabError as e:
                r["refused"] = str(e)
            f.unlink()
        c.close()
    ok = [r for r in rows if "points" in r]
    for r in rows:
        print(f"{r['date']} {r['commit']} {r['path']}: "
              + (f"{r['points']} measurements" if "points" in r else r["refused"]))
    print(f"{len(ok)} of {len(rows)} results file versions imported "
          f"({rows[0]['date'] if rows else '-'} .. {rows[-1]['date'] if rows else '-'})")
    if a.out:
        write_json(a.out, {"files": rows, "imported": len(ok)})
    if held is not None:
        os.close(held)
    return 0 if len(ok) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
