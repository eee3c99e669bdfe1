"""What `mpilab bench` prints for a run over launches: one table of the figures a user reads,
the verdict under it (how many converged, at the asked precision or at the machine's limit),
the cost line, and the note before the run on what the machine allows. Pure formatting of
results documents (mpilab.launches.merge) and the launch-variation store's figures."""

from __future__ import annotations

import math
from typing import Any

from mpilab import quality

#: an interval whose ends are further apart than this factor is printed as "undetermined"
UNDETERMINED_RATIO = 10.0
#: the flag of an interval that determines nothing (the runner's and the report's name)
CI_UNDETERMINED = "ci_undetermined"


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v) if math.isfinite(v) else None


def quantity(m: dict[str, Any]) -> tuple[str, float]:
    """What a row's figure is and the factor from the recorded time: point-to-point round
    trips are printed one way (half the round trip, as IMB and OSU print latency); an entry
    that declares its quantity (`quantity` in the results) is printed as declared."""
    q = m.get("quantity")
    if isinstance(q, str) and q:
        return q, 1.0
    if m.get("timing") == "p2p":
        return "one-way", 0.5
    return "time", 1.0


def _eps(m: dict[str, Any]) -> float | None:
    p = m.get("precision")
    return _num(p.get("eps")) if isinstance(p, dict) else None


def verdict(doc: dict[str, Any]) -> dict[str, Any]:
    """The counts under the table: measurements, converged at eps, converged at the machine's
    limit (and the largest such limit), not converged."""
    ms = [m for m in doc.get("measurements") or [] if isinstance(m, dict)]
    at_eps = at_limit = levels = off = 0
    worst = 0.0
    eps: float | None = None
    for m in ms:
        st = m.get("stats") if isinstance(m.get("stats"), dict) else {}
        eps = eps if eps is not None else _eps(m)
        if st.get("converged") is not True:
            la = m.get("launches") if isinstance(m.get("launches"), dict) else {}
            each = la.get("converged")
            if quality.OFF_USUAL_LEVEL in (m.get("flags") or []):
                off += 1
            else:
                levels += ("variation" not in la and isinstance(each, list) and bool(each)
                           and all(x is True for x in each))
            continue
        if quality.AT_MACHINE_LIMIT in (m.get("flags") or []):
            at_limit += 1
            worst = max(worst, _num(st.get("med_rel_err")) or 0.0)
        else:
            at_eps += 1
    return {"n": len(ms), "at_eps": at_eps, "at_limit": at_limit, "limit_max": worst,
            "not_converged": len(ms) - at_eps - at_limit, "levels_apart": levels,
            "off_level": off,
            "eps": eps}


def verdict_line(doc: dict[str, Any]) -> str:
    v = verdict(doc)
    eps = f"{v['eps'] * 100:g}%" if v["eps"] is not None else "the asked precision"
    conv = v["at_eps"] + v["at_limit"]
    parts = [f"{v['at_eps']} at the asked {eps}"]
    if v["at_limit"]:
        parts.append(f"{v['at_limit']} at this machine's launch-to-launch limit (up to "
                     f"+-{v['limit_max'] * 100:.1f}%)")
    line = f"{conv} of {v['n']} measurements converged: " + ", ".join(parts)
    own = v["not_converged"] - v["levels_apart"] - v["off_level"]
    levels = v["levels_apart"]
    if v["off_level"]:
        line += (f"; {v['off_level']} not converged: this launch sat off the machine's usual "
                 "level for them (off_usual_level; the interval reaches back to it: run again)")
    if own:
        line += (f"; {own} not converged (a launch ran out of repetitions or time before its "
                 "own interval met the precision: see the flags)")
    if levels:
        line += (f"; {levels} not converged although every launch converged (the launches' "
                 f"levels differ by more than {eps}: the interval is theirs)")
    return line


def interval_note(doc: dict[str, Any]) -> str:
    la = doc.get("launches") if isinstance(doc.get("launches"), dict) else {}
    n = la.get("n")
    var = None
    for m in doc.get("measurements") or []:
        mla = m.get("launches") if isinstance(m, dict) else None
        if isinstance(mla, dict) and isinstance(mla.get("variation"), dict):
            var = mla["variation"]
            break
    if var is None:
        what = "1 launch" if n == 1 else f"{n} launches"
        return (f"interval: where a repeat of this command ({what}) would report the figure, "
                "from these launches alone")
    return (f"interval: where a repeat of this command would report the figure "
            f"({var['cl'] * 100:g}%), from this machine's launch-to-launch variation "
            f"({var['launches_stored']} stored launches since {var['since']}) and this run's "
            f"{n} launch(es)")


def table(doc: dict[str, Any]) -> str:
    rows = ["op         impl       timing  where   quantity      bytes      figure(us)"
            "                interval(us)     +-%  converged  flags"]
    p2p = False
    for m in doc.get("measurements") or []:
        if not isinstance(m, dict):
            continue
        st = m.get("stats") if isinstance(m.get("stats"), dict) else {}
        q, k = quantity(m)
        p2p = p2p or m.get("timing") == "p2p"
        pair = m.get("pair")
        where = f"{pair[0]}-{pair[1]}" if isinstance(pair, list) else f"root {m.get('root')}"
        med, lo, hi = (_num(st.get(x)) for x in ("median", "med_lo", "med_hi"))
        rel = _num(st.get("med_rel_err"))
        # an interval over more than a decade bounds nothing a reader can use
        wide = lo is None or hi is None or not lo > 0 or hi / lo > UNDETERMINED_RATIO
        ci = "undetermined" if wide else f"{lo * 1e6 * k:.4g}..{hi * 1e6 * k:.4g}"
        pm = f"{rel * 100:.1f}" if rel is not None and not wide else "-"
        flags = [f for f in m.get("flags") or [] if f != quality.NOT_CONVERGED]
        if wide and CI_UNDETERMINED not in flags:
            flags.append(CI_UNDETERMINED)  # the flag beside the word, as in the runner's table
        if st.get("converged") is not True:
            conv = "no"
        elif quality.AT_MACHINE_LIMIT in flags:
            conv = "at limit"
            flags.remove(quality.AT_MACHINE_LIMIT)
        else:
            conv = "yes"
        fig = f"{med * 1e6 * k:14.4g}" if med is not None else f"{'-':>14}"
        rows.append(f"{m.get('op', '?'):<10} {str(m.get('impl', '')):<10} "
                    f"{str(m.get('timing', '')):<7} {where:<7} {q:<9} {m.get('bytes', 0):>9} "
                    f"{fig} {ci:>27} {pm:>7}  {conv:<9}  {','.join(flags) or '-'}")
    if p2p:
        rows.append("one-way: the round trip / 2 (as OSU and IMB print latency); the results "
                    "file keeps the round trip")
    rows.append(interval_note(doc))
    rows.append(verdict_line(doc))
    return "\n".join(rows) + "\n"


#: a relative half width x beyond which m / (1 + x) .. m (1 + x) spans more than a decade:
#: shown as undetermined, as every interval a person reads (report.units.DECADE)
DECADE_REL = math.sqrt(10.0) - 1


def limits_note(limits: list[float], eps: float, stored: int, since: str,
                mpi: str | None, far_off: tuple[int, int] = (0, 0)) -> str | None:
    """The line before a run: what the machine's stored launch-to-launch variation allows
    at the measurements about to run (relative half widths), against the asked eps."""
    if not limits:
        return None
    lo, hi = min(limits), max(limits)
    over = sum(1 for x in limits if x > eps)
    wide = sum(1 for x in limits if not x <= DECADE_REL)
    span = (f"a repeat lands within +-{lo * 100:.1f}..{hi * 100:.1f}%" if not wide else
            f"a repeat lands within +-{lo * 100:.1f}% up to undetermined ({wide} of "
            f"{len(limits)} measurements: their stored launches disagree by more than a "
            "decade)" if lo <= DECADE_REL else
            "where a repeat lands is undetermined (the stored launches disagree by more "
            "than a decade)")
    head = (f"mpilab: this machine's launch-to-launch variation ({stored} stored launches "
            f"since {since}{', ' + mpi if mpi else ''}): {span}")
    if far_off[0]:
        head += (f" ({far_off[0]} of {far_off[1]} stored launch medians sat far off their "
                 "usual level: a repeat can land there too)")
    if over == 0:
        return head + f"; the asked {eps * 100:g}% is within reach"
    return (head + f"; the asked {eps * 100:g}% cannot be reached at {over} of {len(limits)} "
            "measurements: answered there at their limit")


def cost_line(total_s: float, walls: list[float], measuring: list[float],
              bootstrap: str | None) -> str:
    """The price of the answer, against the command's own wall time (from its start to the
    table). bootstrap: what the extra launches of a first run were for, or None."""
    n = len(walls)
    meas = sum(measuring)
    if n <= 1 or bootstrap is None:
        rest = total_s - meas
        what = "one launch" if n == 1 else f"{n} launches"
        return (f"mpilab: {what}, {total_s:.2f} s in all: {meas:.2f} s measuring, "
                f"{rest:.2f} s starting, synchronising and writing")
    one = walls[0]
    extra = total_s - one
    return (f"mpilab: {n} launches, {total_s:.2f} s in all; one launch took {one:.2f} s: "
            f"{bootstrap} cost {extra:.2f} s more (+{extra / one * 100:.0f}%), once: later "
            "runs make one launch")
