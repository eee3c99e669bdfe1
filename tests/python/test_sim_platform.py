"""`mpilab sim platform`: SimGrid platform files (docs/sim.md).

The generated files are read back by an independent reader written here (its own unit
parsing and its own shortest-path search over the routes, not mpilab.sim.platform's code)
and compared with the testbed spec's values; every kind is run by SimGrid's smpirun with a
small ping-pong compiled by smpicc (skipped with a reason when SimGrid is not installed).
"""

from __future__ import annotations

import hashlib
import heapq
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from mpilab.errors import MpilabError
from mpilab.sim import platform as plat
from mpilab.testbed import spec as tbspec

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

# ---- an independent reader ----

_BW = {"bps": 1.0, "kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9, "Bps": 8.0, "MBps": 8e6,
       "GBps": 8e9}
_LAT = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def _value(text: str, table: dict[str, float]) -> float:
    m = re.fullmatch(r"([0-9.eE+-]+)([A-Za-z]*)", text)
    assert m and m.group(2) in table, text
    return float(m.group(1)) * table[m.group(2)]


class Reader:
    """Hosts, links and routes of a flat platform zone, and host-to-host paths."""

    def __init__(self, data: bytes) -> None:
        root = ET.fromstring(data)
        assert root.tag == "platform" and root.get("version") == "4.1"
        self.config = {p.get("id"): p.get("value") for c in root.findall("config")
                       for p in c.findall("prop")}
        zones = root.findall("zone")
        assert len(zones) == 1
        self.zone = zones[0]
        self.hosts = {h.get("id"): h for h in self.zone.findall("host")}
        # links by directed name: a SPLITDUPLEX link L is L_UP and L_DOWN
        self.bw: dict[str, float] = {}
        self.lat: dict[str, float] = {}
        self.split: set[str] = set()
        for lk in self.zone.findall("link"):
            name = lk.get("id")
            assert name
            b = _value(lk.get("bandwidth", ""), _BW)
            t = _value(lk.get("latency", "0s"), _LAT)
            if lk.get("sharing_policy") == "SPLITDUPLEX":
                self.split.add(name)
                for d in ("UP", "DOWN"):
                    self.bw[f"{name}_{d}"], self.lat[f"{name}_{d}"] = b, t
            else:
                self.bw[name], self.lat[name] = b, t
        # directed edges: (src, dst) -> list of directed links; symmetrical by default
        self.edges: dict[str, list[tuple[str, list[str]]]] = {}
        for r in self.zone.findall("route"):
            src, dst = r.get("src"), r.get("dst")
            assert src and dst
            fwd, back = [], []
            for c in r.findall("link_ctn"):
                name, d = c.get("id"), c.get("direction", "NONE")
                assert name
                if name in self.split:
                    fwd.append(f"{name}_{d}")
                    back.append(f"{name}_{'DOWN' if d == 'UP' else 'UP'}")
                else:
                    fwd.append(name)
                    back.append(name)
            self.edges.setdefault(src, []).append((dst, fwd))
            if r.get("symmetrical", "YES").upper() == "YES":
                self.edges.setdefault(dst, []).append((src, back[::-1]))

    def path(self, src: str, dst: str) -> list[str]:
        """The route with the fewest links (SimGrid's Dijkstra weight); it must be the only
        one of that length, or which one SimGrid takes would be a matter of chance."""
        best: dict[str, tuple[int, list[str]]] = {src: (0, [])}
        ways: dict[str, int] = {src: 1}
        heap = [(0, src)]
        done: set[str] = set()
        while heap:
            cost, node = heapq.heappop(heap)
            if node in done:
                continue
            done.add(node)
            for nxt, links in self.edges.get(node, []):
                c = cost + len(links)
                if nxt not in best or c < best[nxt][0]:
                    best[nxt] = (c, best[node][1] + links)
                    ways[nxt] = ways[node]
                    heapq.heappush(heap, (c, nxt))
                elif c == best[nxt][0]:
                    ways[nxt] += ways[node]
        assert dst in best, f"no route {src} -> {dst}"
        assert ways[dst] == 1, f"{ways[dst]} shortest routes {src} -> {dst}"
        return best[dst][1]

    def end_to_end(self, src: str, dst: str) -> tuple[float, float]:
        """(bottleneck bit/s, latency s) of the route."""
        p = self.path(src, dst)
        return min(self.bw[x] for x in p), sum(self.lat[x] for x in p)


def _spec_platform(path: Path | None, **kw: Any) -> tuple[tbspec.Spec, bytes]:
    sp, keys = plat.load_spec(str(path) if path else None)
    return sp, plat.from_spec(sp, keys, plat.SpecOptions(**kw)).xml


def _check_against_spec(sp: tbspec.Spec, data: bytes, rail: int = 0,
                        lan_latency: float = 0.0) -> None:
    r = Reader(data)
    assert set(r.hosts) == {f"{sp.prefix}-{n}" for n in sp.node_names()}
    nodes = sp.node_names()
    for a in nodes:
        for b in nodes:
            if a == b:
                continue
            lan_a, wan_a = sp.link_rates(a, rail)
            lan_b, wan_b = sp.link_rates(b, rail)
            bw, lat = r.end_to_end(f"{sp.prefix}-{a}", f"{sp.prefix}-{b}")
            if tbspec.parse_node(a)[0] == tbspec.parse_node(b)[0]:
                assert bw == min(lan_a, lan_b), (a, b)
                assert lat == pytest.approx(2 * lan_latency, abs=1e-15), (a, b)
            else:
                assert bw == min(lan_a, lan_b, wan_a, wan_b, sp.wan_total_rate), (a, b)
                assert lat == pytest.approx(sp.wan_delay + 2 * lan_latency, rel=1e-12)
    # the site uplink is shared by the site's nodes, per direction
    for s in range(sp.sites):
        hosts = [f"{sp.prefix}-{n}" for n in nodes if tbspec.parse_node(n)[0] == s]
        others = [f"{sp.prefix}-{n}" for n in nodes if tbspec.parse_node(n)[0] != s]
        if not others:
            continue
        ups = {x for h in hosts for x in r.path(h, others[0]) if x.startswith(
            f"{sp.prefix}-up{s}")}
        assert ups == {f"{sp.prefix}-up{s}_UP"}
        assert r.bw[f"{sp.prefix}-up{s}_UP"] == sp.wan_total_rate
        assert r.bw[f"{sp.prefix}-up{s}_DOWN"] == sp.wan_total_rate


def test_default_spec_matches_by_independent_reader() -> None:
    sp, data = _spec_platform(None)
    assert sp.sites == 2 and sp.nodes_per_site == 4  # the built-in default spec
    _check_against_spec(sp, data)
    r = Reader(data)
    assert r.config == plat.EXACT_CONFIG
    # the same values as examples/testbed/grid-2x4.toml (the default written out)
    sp2, data2 = _spec_platform(EXAMPLES / "testbed" / "grid-2x4.toml")
    _check_against_spec(sp2, data2)
    assert Reader(data2).end_to_end("mlt-s0n0", "mlt-s1n3") == (100e6, 0.005)
    assert Reader(data2).end_to_end("mlt-s0n0", "mlt-s0n3") == (1e9, 0.0)


def test_spec_overrides_rail_and_lan_latency() -> None:
    f = EXAMPLES / "testbed" / "dual-rail-2x2.toml"
    for rail in (0, 1):
        sp, data = _spec_platform(f, rail=rail, ignore={"lan.queue", "wan.queue"},
                                  lan_latency=20e-6)
        _check_against_spec(sp, data, rail=rail, lan_latency=20e-6)
        r = Reader(data)
        # s0n1's rail 1 is slower across the WAN (20 Mbit/s), rail 0 is not
        assert r.bw["mlt-s0n1-wan_UP"] == (20e6 if rail == 1 else 50e6)
        assert r.end_to_end("mlt-s0n1", "mlt-s1n0")[0] == (20e6 if rail == 1 else 50e6)
        assert r.hosts["mlt-s0n0"].find("prop").get("value") == sp.addr("s0n0", rail)
        assert r.zone.find("prop[@id='mpilab.ignored']").get("value") == "lan.queue,wan.queue"
        assert r.zone.find("prop[@id='mpilab.emulator_only']").get("value") == \
            "wan.delayline_buffer"


def test_three_sites_and_prefix(tmp_path: Path) -> None:
    sp, keys = plat.load_spec(str(EXAMPLES / "testbed" / "multilane-3x3.toml"), "sim")
    data = plat.from_spec(sp, keys, plat.SpecOptions()).xml
    assert sp.prefix == "sim"
    _check_against_spec(sp, data)


# ---- the CLI: output, sha256, bad input ----

def _one_line(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode != 0
    assert p.returncode != 70, p.stderr
    err = p.stderr.strip()
    assert err and "\n" not in err and "Traceback" not in err, p.stderr
    return err


def test_cli_stdout_and_sha256(run_cli: Any, tmp_path: Path) -> None:
    p = run_cli("sim", "platform", "flat", "--nodes", "4")
    assert p.returncode == 0, p.stderr
    sha = hashlib.sha256(p.stdout.encode()).hexdigest()
    assert p.stderr.strip().endswith(f"sha256 {sha}")
    q = run_cli("sim", "platform", "flat", "--nodes", "4", "-o", "f.xml")
    assert q.returncode == 0 and q.stdout == ""
    data = (tmp_path / "f.xml").read_bytes()
    assert data == p.stdout.encode()
    assert plat.file_sha256(str(tmp_path / "f.xml")) == sha
    assert sorted(os.listdir(tmp_path)) == ["f.xml"]


def test_mpiblib16_example_is_the_generators_output(run_cli: Any) -> None:
    toml = "examples/platforms/mpiblib16.toml"
    p = run_cli("sim", "platform", "hetero", toml, cwd=REPO)
    assert p.returncode == 0, p.stderr
    shipped = (EXAMPLES / "platforms" / "mpiblib16.xml").read_bytes()
    assert p.stdout.encode() == shipped, "regenerate: see the comment in " + toml
    root = ET.fromstring(shipped)
    hosts = root.findall("zone/host")
    cpus = [h.find("prop").get("value") for h in hosts]
    assert len(hosts) == 16
    assert sum("Xeon" in c for c in cpus) == 11
    assert sum("Pentium 4" in c for c in cpus) == 2
    assert sum("Celeron" in c for c in cpus) == 1
    assert sum("Opteron" in c for c in cpus) == 2
    speeds = {_value(h.get("speed").replace("f", "s"), _LAT) for h in hosts}
    assert speeds == {2.8e9, 3.4e9, 3.6e9, 3.2e9, 2.9e9, 1.8e9}
    assert {lk.get("bandwidth") for lk in root.findall("zone/link")} == {"1000000000bps"}
    assert len(root.findall("zone/host_link")) == 16


@pytest.mark.parametrize("args, expect", [
    (["ring", "--nodes", "4"], "invalid choice: 'ring'"),
    (["torus", "--shape", "4,4", "--nodes", "15"], "has 16 hosts, not --nodes 15"),
    (["torus", "--shape", "4,x"], "'x' is not a count"),
    (["torus", "--shape", "4,0"], "must be at least 1"),
    (["torus", "--shape", "1,1,2"], "every dimension must be at least 2"),
    (["dragonfly", "--shape", "4,1;1,1;1,1;2"], "4 groups need at least 4 routers per chassis"),
    (["dragonfly", "--shape", "4,1;2,1;2,1;2"], "4 groups need at least 4 routers per chassis"),
    (["fattree", "--shape", "2;4;1,2;1,2"], "expected 2 comma-separated counts"),
    (["fattree", "--shape", "2;4,4"], "expected LEVELS;DOWN;UP;PARALLEL"),
    (["dragonfly", "--shape", "3,4;4,3;5,1"], "expected GROUPS,LINKS"),
    (["dragonfly", "--shape", "3,4;4;5,1;2"], "chassis,links"),
    (["flat"], "--nodes is required"),
    (["flat", "--nodes", "70000"], "expected 1 to 65536"),
    (["flat", "--nodes", "4", "--speed", "3GHz"], "not a speed"),
    (["flat", "--nodes", "4", "--bw", "0Gbit"], "rate must be positive"),
    (["torus", "--shape", "2,2", "--backbone-bw", "1Gbit"], "unrecognized arguments"),
])
def test_cli_bad_topology(run_cli: Any, tmp_path: Path, args: list[str], expect: str) -> None:
    p = run_cli("sim", "platform", *args, "-o", "out.xml")
    assert expect in _one_line(p)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("spec, extra, expect", [
    ("multilane-2x4.toml", [], "multilane-2x4.toml:19: lan.queue: cannot be simulated"),
    ("dual-rail-2x2.toml", ["--ignore", "lan.queue", "--ignore", "wan.queue"],
     "dual-rail-2x2.toml:8: cluster.rails: 2 rails cannot be simulated"),
    ("dual-rail-2x2.toml", ["--ignore", "lan.queue", "--ignore", "wan.queue", "--rail", "2"],
     "--rail 2:"),
    ("multilane-2x4-sockbuf.toml", ["--ignore", "lan.queue"],
     "multilane-2x4-sockbuf.toml:25: wan.socket_buffer: cannot be simulated"),
    ("grid-2x4.toml", ["--ignore", "wan.delay"], "--ignore wan.delay: not a key"),
])
def test_cli_spec_keys_simgrid_cannot_express(run_cli: Any, tmp_path: Path, spec: str,
                                              extra: list[str], expect: str) -> None:
    p = run_cli("sim", "platform", "spec", str(EXAMPLES / "testbed" / spec), *extra,
                "-o", "out.xml")
    assert expect in _one_line(p)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("text, q, line", [
    ('[lan]\nqueue = "1M"\n', "lan.queue", 2),
    ('lan.queue = "1M"\n', "lan.queue", 0),  # a dotted key: set, its line not found
    ('lan = { queue = "1M" }\n', "lan.queue", 1),  # an inline table
    ('[lan]\nrate = "1Gbit"\n[wan]\n"queue" = "1M"\n', "wan.queue", 4),  # a quoted key
])
def test_spec_keys_however_written(text: str, q: str, line: int) -> None:
    keys = plat.spec_keys(text)
    assert keys[q] == line
    sp = tbspec.load_text(text, "s.toml")
    with pytest.raises(MpilabError, match=f"{q}: cannot be simulated"):
        plat.from_spec(sp, keys, plat.SpecOptions())


def test_cli_spec_file_errors(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text("[cluster]\nsites = 2\nnodes = 3\n")
    assert "bad.toml:3: cluster.nodes: unknown key" in _one_line(
        run_cli("sim", "platform", "spec", "bad.toml", "-o", "out.xml"))
    os.mkfifo(tmp_path / "spec.fifo")
    assert "FIFO" in _one_line(run_cli("sim", "platform", "spec", "spec.fifo", "-o", "o.xml",
                                       timeout=30))
    (tmp_path / "h.toml").write_text('[cluster]\nrate = "1Gbit"\n[[nodes]]\ncount = 2\n'
                                     'speed = "1Gf"\n')
    assert "h.toml:3: nodes: no latency" in _one_line(
        run_cli("sim", "platform", "hetero", "h.toml", "-o", "out.xml"))
    (tmp_path / "h.toml").write_text('[lan]\nrate = "1Gbit"\n')
    assert "h.toml:1: lan: unknown key" in _one_line(
        run_cli("sim", "platform", "hetero", "h.toml", "-o", "out.xml"))
    assert not (tmp_path / "out.xml").exists() and not (tmp_path / "o.xml").exists()


def test_cli_unwritable_and_fifo_output(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    before = sorted(os.listdir(tmp_path))
    for out in ("file/p.xml", ".", "/proc/mpilab-nope/p.xml"):
        assert out.split("/")[0] in _one_line(run_cli("sim", "platform", "flat", "--nodes",
                                                      "2", "-o", out))
    os.mkfifo(tmp_path / "p.fifo")
    err = _one_line(run_cli("sim", "platform", "flat", "--nodes", "2", "-o", "p.fifo",
                            timeout=30))
    assert "FIFO" in err
    assert sorted(os.listdir(tmp_path)) == sorted([*before, "p.fifo"])  # no temporaries


def test_shape_hosts_and_units() -> None:
    assert plat.shape_hosts("torus", "4,4,4") == 64
    assert plat.shape_hosts("fattree", "2;4,4;1,2;1,2") == 16
    assert plat.shape_hosts("fattree", "3;4,4,4;1,4,4;1,1,1") == 64
    assert plat.shape_hosts("dragonfly", "3,4;4,3;5,1;2") == 120
    assert plat.shape_hosts("dragonfly", "4,1;2,1;4,1;1") == 32  # 4 groups, 4 routers a chassis
    with pytest.raises(MpilabError, match="unknown"):
        plat.shape_hosts("hypercube", "2")
    assert plat.parse_speed("2.8Gf") == 2.8e9
    assert plat.parse_speed(1e9) == 1e9
    for bad in ("2.8GHz", "-1Gf", "0f", "nanf", True):
        with pytest.raises(ValueError):
            plat.parse_speed(bad)


# ---- SimGrid runs the files ----

PINGPONG = EXAMPLES / "platforms" / "pingpong.c"


@pytest.fixture(scope="module")
def pingpong(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for tool in ("smpicc", "smpirun"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not found (SimGrid SMPI not installed: apt libsimgrid-dev)")
    d = tmp_path_factory.mktemp("smpi")
    p = subprocess.run(["smpicc", "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-o",
                        str(d / "pp"), str(PINGPONG)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return d / "pp"


def _smpirun_full(exe: Path, data: bytes, hosts: list[str], np: int,
                  tmp: Path) -> tuple[dict[int, float], dict[int, float]]:
    """({bytes: one-way s}, {rank: s to compute 1e9 simulated flops})."""
    (tmp / "platform.xml").write_bytes(data)
    (tmp / "hostfile").write_text("".join(h + "\n" for h in hosts[:np]))
    p = subprocess.run(["smpirun", "-np", str(np), "-platform", str(tmp / "platform.xml"),
                        "-hostfile", str(tmp / "hostfile"), str(exe)], cwd=tmp,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    out = dict(re.findall(r"oneway (\d+) (\S+)", p.stdout))
    assert set(out) == {"1", "1000000"}, p.stdout
    assert f"alltoall {np} ranks 0 wrong" in p.stdout, p.stdout  # every pair routed
    comp = {int(r): float(t) for r, t in re.findall(r"compute (\d+) (\S+)", p.stdout)}
    assert sorted(comp) == list(range(np)), p.stdout
    return {int(k): float(v) for k, v in out.items()}, comp


def _smpirun(exe: Path, data: bytes, hosts: list[str], np: int, tmp: Path) -> dict[int, float]:
    return _smpirun_full(exe, data, hosts, np, tmp)[0]


def test_smpirun_runs_the_default_spec_with_its_values(pingpong: Path, tmp_path: Path) -> None:
    sp, data = _spec_platform(None)
    hosts = [sp.ns(n) for n in sp.node_names()]
    # 8 ranks: rank 0 on s0n0, the last on s1n3 (across the WAN)
    t = _smpirun(pingpong, data, hosts, len(hosts), tmp_path)
    # a 1-byte message: L plus 8 bits over the bottleneck; 1 MB: L + 8e6 / b_WAN
    assert t[1] == pytest.approx(sp.wan_delay, rel=1e-3)
    assert t[1000000] == pytest.approx(sp.wan_delay + 8e6 / sp.wan_node_rate, rel=1e-3)
    t = _smpirun(pingpong, data, hosts, 2, tmp_path)  # s0n0 - s0n1: the LAN only
    assert t[1000000] == pytest.approx(8e6 / sp.lan_rate, rel=1e-3)


@pytest.mark.parametrize("kind, args, n", [
    ("flat", ["--nodes", "8", "--lat", "5us", "--bw", "1Gbit"], 8),
    ("flat", ["--nodes", "4", "--backbone-bw", "500Mbit", "--cores", "2"], 4),
    ("torus", ["--shape", "2,2,2"], 8),
    ("fattree", ["--shape", "2;4,4;1,2;1,2", "--nodes", "16"], 16),
    ("dragonfly", ["--shape", "2,1;2,1;2,1;2"], 16),
    ("dragonfly", ["--shape", "4,1;2,1;4,1;1"], 32),  # as many groups as routers a chassis
    ("torus", ["--shape", "7"], 7),
])
def test_smpirun_accepts_each_topology(pingpong: Path, tmp_path: Path, run_cli: Any,
                                       kind: str, args: list[str], n: int) -> None:
    p = run_cli("sim", "platform", kind, *args, "-o", "p.xml")
    assert p.returncode == 0, p.stderr
    data = (tmp_path / "p.xml").read_bytes()
    t = _smpirun(pingpong, data, [f"node-{i}" for i in range(n)], n, tmp_path)
    if kind == "flat" and "--lat" in args:
        # two links of 5 us between any two nodes of the switch; 1 MB at 1 Gbit/s (SMPI
        # sends about 16 bytes more than the message: +136 ns at 1 Gbit/s)
        assert t[1] == pytest.approx(10e-6, rel=0.02)
        assert t[1000000] == pytest.approx(10e-6 + 8e-3, rel=1e-3)
    if "--backbone-bw" in args:
        assert t[1000000] == pytest.approx(8e6 / 500e6, rel=0.01)  # the switch limits


def test_smpirun_accepts_mpiblib16(pingpong: Path, tmp_path: Path) -> None:
    data = (EXAMPLES / "platforms" / "mpiblib16.xml").read_bytes()
    t, comp = _smpirun_full(pingpong, data, [f"hcl-{i}" for i in range(16)], 16, tmp_path)
    assert t[1] == pytest.approx(50e-6, rel=0.01)  # 25 us per node link, two links
    assert t[1000000] == pytest.approx(50e-6 + 8e-3, rel=1e-3)  # Gigabit Ethernet
    # each rank's host computes at its own CPU speed: 1e9 flops take 1e9 / speed
    speeds = [float(h.get("speed").rstrip("f")) for h in ET.fromstring(data).iter("host")]
    for r in range(16):
        assert comp[r] == pytest.approx(1e9 / speeds[r], rel=1e-6), r


def test_smpirun_hetero_per_node_rate_and_speed(pingpong: Path, tmp_path: Path,
                                                run_cli: Any) -> None:
    (tmp_path / "c.toml").write_text(
        '[cluster]\nname = "h"\nlatency = "10us"\n'
        '[[nodes]]\ncount = 1\nspeed = "2Gf"\nrate = "1Gbit"\n'
        '[[nodes]]\ncount = 1\nspeed = "500Mf"\nrate = "100Mbit"\nlatency = "40us"\ncores = 2\n')
    p = run_cli("sim", "platform", "hetero", "c.toml", "-o", "c.xml")
    assert p.returncode == 0, p.stderr
    t, comp = _smpirun_full(pingpong, (tmp_path / "c.xml").read_bytes(), ["h-0", "h-1"], 2,
                            tmp_path)
    # 10 us + 40 us (and SMPI's ~16 bytes per message: 1.3 us at 100 Mbit/s)
    assert t[1] == pytest.approx(50e-6, rel=0.05)
    assert t[1000000] == pytest.approx(50e-6 + 8e6 / 100e6, rel=1e-3)  # the slower node
    assert comp[0] == pytest.approx(0.5, rel=1e-6)
    assert comp[1] == pytest.approx(2.0, rel=1e-6)
    # a switch of 50 Mbit/s and 5 us: crossed once (SimGrid counts a link once per route)
    (tmp_path / "s.toml").write_text(
        '[cluster]\nname = "h"\nlatency = "10us"\nswitch_rate = "50Mbit"\n'
        'switch_latency = "5us"\n[[nodes]]\ncount = 2\nspeed = "1Gf"\nrate = "1Gbit"\n')
    p = run_cli("sim", "platform", "hetero", "s.toml", "-o", "s.xml")
    assert p.returncode == 0, p.stderr
    t = _smpirun(pingpong, (tmp_path / "s.xml").read_bytes(), ["h-0", "h-1"], 2, tmp_path)
    assert t[1] == pytest.approx(25e-6, rel=0.15)  # 10 + 5 + 10 us, + ~16 B at 50 Mbit/s
    assert t[1000000] == pytest.approx(25e-6 + 8e6 / 50e6, rel=1e-3)


def test_hostfile_and_hosts_of(run_cli: Any, tmp_path: Path) -> None:
    p = run_cli("sim", "platform", "torus", "--shape", "2,3", "--name", "t", "-o", "t.xml",
                "--hostfile", "hosts")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "hosts").read_text().split() == [f"t-{i}" for i in range(6)]
    assert plat.hosts_of((tmp_path / "t.xml").read_bytes()) == [f"t-{i}" for i in range(6)]
    sp, data = _spec_platform(None)
    assert plat.hosts_of(data) == [sp.ns(n) for n in sp.node_names()]
    assert plat.hosts_of(b'<platform><cluster prefix="c" suffix=".x" radical="0-1,5"/>'
                         b'</platform>') == ["c0.x", "c1.x", "c5.x"]
    for bad, msg in ((b"<platform", "not XML"), (b"<zone/>", "not a SimGrid platform"),
                     (b'<platform><cluster radical="5-1"/></platform>', "radical")):
        with pytest.raises(MpilabError, match=msg):
            plat.hosts_of(bad)
    assert "--hostfile -" in _one_line(run_cli("sim", "platform", "flat", "--nodes", "2",
                                               "--hostfile", "-"))
    assert "the same file as -o" in _one_line(run_cli("sim", "platform", "flat", "--nodes",
                                                      "2", "-o", "t.xml", "--hostfile",
                                                      "./t.xml"))


def test_hostfile_that_cannot_be_written_leaves_no_platform(run_cli: Any,
                                                            tmp_path: Path) -> None:
    """A host file on a full device or a FIFO with no reader: one line, non-zero, and no
    platform file written; a platform that cannot be written takes back the host file."""
    import os

    os.mkfifo(tmp_path / "fifo")
    for hf in ("/dev/full", "fifo"):
        p = run_cli("sim", "platform", "flat", "--nodes", "2", "-o", "p.xml", "--hostfile", hf)
        assert p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert not (tmp_path / "p.xml").exists()
    p = run_cli("sim", "platform", "flat", "--nodes", "2", "-o", "/dev/full", "--hostfile",
                "hosts")
    assert p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (tmp_path / "hosts").exists()


def test_reader_catches_a_wrong_platform() -> None:
    """The reader's checks can fail: without the per-node WAN link in the routes to the
    gateway, node-gateway-node ties node-switch-node inside a site, and the cross-site
    bottleneck is no longer b_WAN."""
    sp, data = _spec_platform(None)
    root = ET.fromstring(data)
    for r in root.iter("route"):
        for c in list(r):
            if c.get("id", "").endswith("-wan"):
                r.remove(c)
    broken = ET.tostring(root)
    with pytest.raises(AssertionError, match="shortest routes"):
        Reader(broken).path("mlt-s0n0", "mlt-s0n1")
    with pytest.raises(AssertionError):
        _check_against_spec(sp, broken)


@pytest.mark.parametrize("spec, extra", [
    ("grid-2x4.toml", []),
    ("multilane-2x8.toml", []),
    ("multilane-3x3.toml", []),
    ("multilane-2x4.toml", ["--ignore", "lan.queue"]),
    ("multilane-2x4-sockbuf.toml", ["--ignore", "lan.queue", "--ignore", "wan.socket_buffer"]),
    ("dual-rail-2x2.toml", ["--ignore", "lan.queue", "--ignore", "wan.queue", "--rail", "1"]),
])
def test_shipped_specs_as_docs_say(run_cli: Any, tmp_path: Path, spec: str,
                                   extra: list[str]) -> None:
    """docs/sim.md: which shipped specs map as they are and which need which options."""
    path = EXAMPLES / "testbed" / spec
    p = run_cli("sim", "platform", "spec", str(path), *extra, "-o", "p.xml")
    assert p.returncode == 0, p.stderr
    sp = plat.load_spec(str(path))[0]  # the file's prefix, as the CLI (no environment)
    rail = int(extra[extra.index("--rail") + 1]) if "--rail" in extra else 0
    _check_against_spec(sp, (tmp_path / "p.xml").read_bytes(), rail=rail)
    if extra:  # and without the options, refused
        assert "cannot be simulated" in _one_line(
            run_cli("sim", "platform", "spec", str(path), "-o", "q.xml"))


@pytest.mark.parametrize("args", [["sim"], ["sim", "platform"]])
def test_group_without_action_is_one_line(run_cli: Any, args: list[str]) -> None:
    p = run_cli(*args)
    name = " ".join(args)
    assert _one_line(p) == f"mpilab: {name}: no action given (mpilab {name} --help lists them)"
