#!/usr/bin/env python3
"""Wave chaining on striped emulated disks (the paper's future work: more disks, so a new
wave can read from another disk than the current wave).

The data and coefficients are split into P band files (one per MPI rank, optimized layout);
band i lives on disk i mod K of the spec. Per round, interleaved: 1 and 2 waves with the
bands on K disks ("striped") and with every band on the first disk ("one disk"). Every
run uses O_DIRECT, so each request reaches its disk's model; ratios are taken inside a
round, medians [min, max] over rounds. With one position-aware disk, two waves interleave
two far-apart request streams (a seek at every switch); on two disks each disk serves one
stream.

Example (as root): python3 bench/wavefront_stripe.py --spec examples/disk/seek2.toml \\
    --rows 2048 --cols 2048 --mb 256 --nb 512 --ranks 2 --rounds 3 --out /tmp/wfs
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from harness import find_tool, mpi_env, mpirun
from mpilab.disk import dev
from mpilab.disk import spec as specmod
from mpilab.fsutil import atomic_write_text
from wf_disklib import Counters, bounds, drop_pages, summary


class Timeline:
    """Per-disk request timelines, sampled: every 50 ms the seek models' busy time (their
    statistics files, rewritten every 20 ms), so each window says how busy each disk was;
    `summary` gives each disk's busy fraction over the run and the fraction of windows in
    which both disks (more than half busy) served the run at once, or none did."""

    def __init__(self, ctrs: list[Counters], period: float = 0.05) -> None:
        self.ctrs, self.period = ctrs, period
        self.samples: list[tuple[float, list[float]]] = []
        self._halt = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._halt.is_set():
            self.samples.append((time.monotonic(),
                                 [c.read().get("busy_s", 0.0) for c in self.ctrs]))
            self._halt.wait(self.period)

    def stop(self) -> None:
        self._halt.set()
        self._t.join()

    def summary(self) -> dict[str, Any]:
        s = self.samples
        n = len(self.ctrs)
        if len(s) < 3:
            return {"busy_frac": [float("nan")] * n, "both_frac": float("nan"),
                    "none_frac": float("nan"), "windows": 0}
        fr = []
        for (t0, b0), (t1, b1) in zip(s, s[1:], strict=False):
            dt = t1 - t0
            fr.append([min(1.0, max(0.0, (y - x) / dt)) if dt > 0 else 0.0
                       for x, y in zip(b0, b1, strict=True)])
        span = s[-1][0] - s[0][0]
        tot = [(s[-1][1][i] - s[0][1][i]) / span for i in range(n)]
        on = [[x > 0.5 for x in f] for f in fr]
        return {"busy_frac": tot, "windows": len(fr),
                "both_frac": sum(1 for o in on if sum(o) >= 2) / len(fr),
                "none_frac": sum(1 for o in on if not any(o)) / len(fr)}


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", required=True, help="disk spec with at least 2 disks")
    ap.add_argument("--prefix", default="wfs")
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--cols", type=int, default=2048)
    ap.add_argument("--mb", type=int, default=256)
    ap.add_argument("--nb", type=int, default=512)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", required=True)
    ap.add_argument("--prepare-only", action="store_true",
                    help="bring the disks up and make the files, leave them up and stop (a "
                         "later run with the same --prefix and --out does only the rounds; "
                         "`mpilab disk down --prefix P` afterwards)")
    return ap.parse_args()


def report(a: argparse.Namespace, sp: specmod.DiskSpec, places: list[str],
           rounds: list[dict[str, Any]], out: Path) -> None:
    """OUT/report.md (and the terminal): per configuration the times and the disks' busy
    time over the rounds, then the ratios of the same round."""
    K = len(sp.disks)
    lines = [f"# Wave chaining on striped disks ({sp.source})", "",
             f"{a.rows}x{a.cols}, blocks {a.mb}x{a.nb}, {a.ranks} ranks, {a.iterations} "
             f"iterations, O_DIRECT, {a.rounds} rounds, load average at the end "
             f"{os.getloadavg()[0]:.1f}.", "",
             "s/iteration: total time / iterations (the pipeline's fill and drain included) "
             "and steady (median time between successive iterations' completions, the "
             "first excluded); disks busy: each disk's modelled busy time per iteration; "
             "busy fraction of the run per disk, and the share of 50 ms windows in which "
             "both disks were more than half busy.", "",
             "| configuration | s/iteration (total) | s/iteration (steady) | busy time of "
             "each disk per iteration (model) | busy fraction of the run | both busy at "
             "once |", "|---|---|---|---|---|---|"]
    for key in rounds[0]:
        lines.append(f"| {key} | {summary([r[key]['s_per_iter'] for r in rounds])} | "
                     f"{summary([r[key]['steady_s'] for r in rounds])} | "
                     + ", ".join(summary([r[key]['disk_busy'][i] for r in rounds])
                                 for i in range(K)) + " | "
                     + ", ".join(summary([r[key]['overlap']['busy_frac'][i]
                                          for r in rounds]) for i in range(K)) + " | "
                     + summary([r[key]['overlap']['both_frac'] for r in rounds]) + " |")
    lines += ["", "| ratio (same round) | per round | median [min, max] |", "|---|---|---|"]
    for what, fld in (("total", "s_per_iter"), ("steady", "steady_s")):
        for pl in places:
            v = [r[f"{pl}, 1 wave"][fld] / r[f"{pl}, 2 waves"][fld] for r in rounds]
            lines.append(f"| {pl}: 1 wave / 2 waves ({what}) | "
                         f"{' '.join(f'{x:.2f}' for x in v)} | {summary(v)} |")
        v = [r["one disk, 2 waves"][fld] / r["striped, 2 waves"][fld] for r in rounds]
        lines.append(f"| 2 waves: one disk / striped ({what}) | "
                     f"{' '.join(f'{x:.2f}' for x in v)} | {summary(v)} |")
    atomic_write_text(out / "report.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> int:
    a = parse_args()
    sp = specmod.load(a.spec, a.prefix)
    if len(sp.disks) < 2:
        raise SystemExit(f"{a.spec}: striping needs at least 2 disks")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MPILAB_DISK_STATE_ROOT", str(out / "state"))
    made = dev.load_state(a.prefix) is None
    if made:
        dev.up(sp)
    made = made and not a.prepare_only
    tool = find_tool("mpilab-wavefront")
    try:
        st = dev.load_state(a.prefix)
        assert st is not None
        mnts = [Path(st["disks"][d.name]["mount"]) for d in sp.disks]
        ctrs = [Counters(a.prefix, st["disks"][d.name]) for d in sp.disks]
        K = len(sp.disks)
        # files per geometry: disks left up (a prepared run) may hold another geometry's
        src = mnts[0] / f"src-{a.rows}x{a.cols}-{a.mb}x{a.nb}-p{a.ranks}"
        src.mkdir(exist_ok=True)

        def wf(*args: str) -> None:
            p = subprocess.run([tool, *args], capture_output=True, text=True, check=False)
            if p.returncode:
                raise SystemExit(p.stderr.strip())

        if not (src / "d0").exists():
            wf("create", "--rows", str(a.rows), "--cols", str(a.cols), str(src / "d0"),
               str(src / "c0"))
            wf("convert", "--quiet", "--layout", "optimized", "--mb", str(a.mb), "--nb", str(a.nb),
               "--bands", str(a.ranks), str(src / "d0"), str(src / "d"))
            wf("convert", "--quiet", "--layout", "block", "--mb", str(a.mb), "--nb", str(a.nb),
               "--bands", str(a.ranks), str(src / "c0"), str(src / "c"))
        # the runs' files: names (per placement) of symlinks to the band files on their disk
        places = {"striped": [mnts[i % K] for i in range(a.ranks)],
                  "one disk": [mnts[0]] * a.ranks}
        for name, where in places.items():
            tag = "s" if name == "striped" else "o"
            for i, m in enumerate(where):
                for kind in ("c", "d"):
                    real = m / f"{src.name}-{tag}{kind}.{i}"
                    if kind == "c" and not real.exists():
                        shutil.copyfile(src / f"c.{i}", real)
                    link = out / f"{tag}{kind}.{i}"
                    if link.is_symlink() or link.exists():
                        link.unlink()
                    link.symlink_to(real)
        cfgs = [(pl, w) for pl in places for w in (1, 2)]
        if a.prepare_only:
            print(f"prepared {len(cfgs)} configurations on disks '{a.prefix}' (left up)")
            return 0
        rounds: list[dict[str, Any]] = []
        for r in range(a.rounds):
            res: dict[str, Any] = {}
            for pl, w in cfgs[r % len(cfgs):] + cfgs[:r % len(cfgs)]:
                tag = "s" if pl == "striped" else "o"
                files = []
                for i in range(a.ranks):
                    real = (out / f"{tag}d.{i}").resolve()
                    shutil.copyfile(src / f"d.{i}", real)
                    files += [real, (out / f"{tag}c.{i}").resolve()]
                drop_pages(files)
                jf = out / "run.json"
                cmd = mpirun(a.ranks) + [
                    tool, "run", "--mpi", "--data", str(out / f"{tag}d"), "--coef",
                    str(out / f"{tag}c"), "--iterations", str(a.iterations), "--waves", str(w),
                    "--io", "direct", "--quiet", "--json", str(jf)]
                k0 = [c.read() for c in ctrs]
                tl = Timeline(ctrs)
                p = subprocess.run(cmd, capture_output=True, text=True, env=mpi_env(),
                                   check=False, timeout=3600,
                                   preexec_fn=lambda: dev.join_cgroup(a.prefix))  # noqa: PLW1509
                tl.stop()
                if p.returncode:
                    raise SystemExit(f"{' '.join(cmd)}: {p.stderr.strip()}")
                time.sleep(0.1)  # the seek model's statistics are written every 20 ms
                k1 = [c.read() for c in ctrs]
                doc = json.loads(jf.read_text())["wavefront"]
                busy = [bounds(d, x, y)["model"] / a.iterations
                        for d, x, y in zip(sp.disks, k0, k1, strict=True)]
                key = f"{pl}, {w} wave{'s' if w > 1 else ''}"
                its = doc.get("iteration_s") or []
                steady = statistics.median(its[1:]) if len(its) > 1 else float("nan")
                res[key] = {"s_per_iter": doc["total_s"] / a.iterations, "steady_s": steady,
                            "disk_busy": busy,
                            "overlap": tl.summary(),
                            "ranks": [{k: v for k, v in x.items() if k.endswith("_s")}
                                      for x in doc.get("per_worker", [])]}
                ov = res[key]["overlap"]
                print(f"round {r + 1} {key}: {res[key]['s_per_iter']:.3f} s/iter (total / "
                      f"iterations), {steady:.3f} s/iter steady, disks busy "
                      f"{', '.join(f'{b:.3f}' for b in busy)} s/iter; of the run: disk(s) busy "
                      f"{', '.join(f'{x:.0%}' for x in ov['busy_frac'])}, both at once "
                      f"{ov['both_frac']:.0%}, none {ov['none_frac']:.0%}", flush=True)
            rounds.append(res)
            atomic_write_text(out / "rounds.json", json.dumps(rounds, indent=1) + "\n")
        report(a, sp, list(places), rounds, out)
    finally:
        if made:
            dev.down(a.prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
