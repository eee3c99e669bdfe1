"""Testbed spec parsing and validation (no root needed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mpilab.errors import MpilabError
from mpilab.testbed import spec as specmod

REPO = Path(__file__).resolve().parents[2]

# the tests' two-site spec with a prefix and one slower WAN link
GOOD = ('prefix = "abc"\n' + (REPO / "tests" / "data" / "testbed" / "two-sites.toml").read_text()
        + '\n[[link]]\nnode = "s0n1"\nrail = 1\nwan_rate = "20Mbit"\n')


def test_good_spec_and_address_plan() -> None:
    sp = specmod.load_text(GOOD, "g.toml")
    assert sp.prefix == "abc" and sp.sites == 2 and sp.rails == 2
    assert sp.wan_node_rate == 50_000_000 and sp.wan_total_rate == 80_000_000
    assert sp.wan_delay == pytest.approx(0.005)
    assert sp.node_names() == ["s0n0", "s0n1", "s1n0", "s1n1"]
    # distinct addresses, each inside its (site, rail) subnet, gateway outside the nodes
    addrs = {sp.addr(n, r) for n in sp.node_names() for r in range(2)}
    assert len(addrs) == 8
    import ipaddress
    for n in sp.node_names():
        s = int(n[1])
        for r in range(2):
            assert ipaddress.ip_address(sp.addr(n, r)) in sp.rail_net(s, r)
            assert sp.addr(n, r) != sp.gateway(s, r)
    assert sp.link_rates("s0n1", 1) == (1_000_000_000, 20_000_000)
    assert sp.link_rates("s0n1", 0) == (1_000_000_000, 50_000_000)
    assert all(ns.startswith("abc-") for ns in sp.namespaces())


def test_default_spec_is_two_sites_of_four() -> None:
    sp = specmod.load(None, prefix="zz")
    assert (sp.sites, sp.nodes_per_site, sp.prefix) == (2, 4, "zz")


def test_prefix_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MPILAB_TESTBED_PREFIX", "envp")
    assert specmod.load(None).prefix == "envp"


def _bad(text: str) -> str:
    with pytest.raises(MpilabError) as e:
        specmod.load_text(text, "bad.toml")
    msg = str(e.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize("text,line,words", [
    ("[cluster]\nsites = 2\nnodez = 3\n", 3, "unknown key"),
    ("colour = 1\n", 1, "unknown key"),
    ("[wan]\nnode_rate = \"-5Mbit\"\n", 2, "positive"),
    ("[lan]\nrate = -100\n", 2, "positive"),
    ("[lan]\nrate = \"fast\"\n", 2, "not a rate"),
    ("[wan]\ndelay = \"-1ms\"\n", 2, "negative"),
    ("[wan]\ntotal_rate = \"10Gbit\"\ndelay = \"2s\"\n", 3, "buffer"),
    ("[cluster]\nnodes_per_site = 300\n", 2, "more nodes than addresses"),
    ("[cluster]\nsites = 3\nsubnet = \"10.9.0.0/23\"\n", 2, "subnets"),
    ("[cluster]\nsubnet = \"8.8.0.0/16\"\n", 2, "private"),
    ("[cluster]\nsites = 2\n[[link]]\nnode = \"s7n0\"\n", 4, "no such node"),
    ("[cluster]\nrails = 1\n[[link]]\nnode = \"s0n0\"\nrail = 1\n", 5, "between"),
    ("[[link]]\nnode = \"s0n0\"\n[[link]]\nnode = \"s0n0\"\nspeed = 3\n", 5, "unknown key"),
    ("[cluster]\nsites = \n", 2, "syntax"),
    ("prefix = \"Bad-Prefix\"\n", 1, "prefix"),
    ("[wan]\ndelay_trim = \"2ms\"\n", 2, "0 to 1 ms"),
    ("[wan]\ndelay_trim = \"sometimes\"\n", 2, "delay_trim"),
])
def test_bad_specs_name_file_and_line(text: str, line: int, words: str) -> None:
    msg = _bad(text)
    assert msg.startswith(f"bad.toml:{line}: "), msg
    assert words in msg, msg


def test_delay_trim_auto_or_a_duration() -> None:
    # the default spec (2 sites, wan.delay_io = "auto") gets the packet line: trim measured
    assert specmod.load_text("", "d.toml").delay_trim is None
    assert specmod.load_text('[wan]\ndelay_io = "tun"\n', "t0.toml").delay_trim == 0.0
    assert specmod.load_text('[wan]\ndelay_trim = "auto"\n', "a.toml").delay_trim is None
    sp = specmod.load_text('[wan]\ndelay_trim = "12us"\n', "t.toml")
    assert sp.delay_trim == pytest.approx(12e-6)
    assert specmod.Spec.from_dict(sp.to_dict()).delay_trim == pytest.approx(12e-6)
    # packet I/O measures its trim unless told otherwise (its warmed path crosses faster
    # than the undelayed route); not with one site (no route between sites to measure)
    pk = specmod.load_text('[wan]\ndelay_io = "packet"\n', "p.toml")
    assert pk.delay_trim is None and specmod.Spec.from_dict(pk.to_dict()).delay_trim is None
    assert specmod.load_text('[wan]\ndelay_io = "packet"\ndelay_trim = "0us"\n',
                             "p0.toml").delay_trim == 0.0
    one = specmod.load_text('[cluster]\nsites = 1\n[wan]\ndelay_io = "packet"\n', "p1.toml")
    assert one.sites == 1 and one.delay_trim == 0.0


@pytest.mark.parametrize("text, packet", [
    ("", True),  # the default: 2 sites, one line for every site
    ('[wan]\ndelay_io = "tun"\n', False),
    ('[wan]\ndelay_io = "packet"\n', True),
    ('[cluster]\nsites = 1\n', False),  # no route between sites
    ('[wan]\ndelay_backend = "netem"\n', False),
    ('[wan]\ndelay_backend = "delayline"\n', True),
    ('[[link]]\nnode = "s1n0"\nwan_delay = "2ms"\n', False),  # a line of its own
])
def test_delay_io_auto_takes_packet_sockets_where_one_line_serves(text: str,
                                                                   packet: bool) -> None:
    sp = specmod.load_text(text, "io.toml")
    assert sp.delay_io == ("auto" if "delay_io" not in text else sp.delay_io)
    assert sp.packet_line_wanted() is packet
    # the trim is measured exactly where the packet line runs
    assert (sp.delay_trim is None) is (packet and sp.sites >= 2)
    assert specmod.Spec.from_dict(sp.to_dict()).packet_line_wanted() is packet


def test_delay_limit_follows_buffer() -> None:
    # 2 uplinks x 1 Gbit/s x 300 ms = 75 MB (+10% ring overhead) > the default 64 MiB
    base = "[wan]\ntotal_rate = \"1Gbit\"\ndelay = \"300ms\"\n"
    assert "too large for the delay line's buffer" in _bad(base)
    ok = specmod.load_text(base + "delayline_buffer = \"256M\"\n", "ok.toml")
    assert ok.delayline_bytes_needed() <= ok.delayline_buffer


def test_cli_refuses_bad_spec_with_one_line(tmp_path: Path) -> None:
    f = tmp_path / "s.toml"
    f.write_text("[cluster]\nsites = 2\n\n[wan]\nnode_rate = \"-1Mbit\"\n")
    p = subprocess.run([sys.executable, "-m", "mpilab.cli", "testbed", "up", str(f),
                        "--prefix", "nope"], capture_output=True, text=True,
                       cwd=REPO, timeout=60)
    assert p.returncode != 0
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{f}:5:" in lines[0], p.stderr


def test_examples_are_valid() -> None:
    files = sorted((REPO / "examples" / "testbed").glob("*.toml"))
    assert files
    for f in files:
        specmod.load(str(f))


@pytest.mark.parametrize("prefix", ["rb\n", "rb\n\n", "RB", "1ab", "abcdefg", "ab-c", "a b",
                                    "ab\x00", "\nab"])
def test_bad_prefix_refused(prefix: str) -> None:
    """`$` in the old regex matched before a final newline: 'rb\\n' brought up namespaces
    that `down --prefix rb` could not find."""
    with pytest.raises(MpilabError, match="must be 1-6 characters"):
        specmod.load_text(f"prefix = {json.dumps(prefix)}\n", "p.toml")
    with pytest.raises(MpilabError, match="must be 1-6 characters"):
        specmod.load_text("", "p.toml", prefix)


def test_cli_refuses_a_prefix_with_a_newline_before_creating_anything() -> None:
    for action in ("up", "down"):
        p = subprocess.run([sys.executable, "-m", "mpilab.cli", "testbed", action,
                            "--prefix", "rb\n"], capture_output=True, text=True, cwd=REPO,
                           timeout=60)
        assert p.returncode == 2, (action, p.stdout, p.stderr)
        assert p.stderr.strip().splitlines() == [
            "mpilab: prefix 'rb\\n': must be 1-6 characters a-z0-9, starting with a letter"]


@pytest.mark.parametrize("node", ["s0n1\n", "s0n1 ", "s\u0663n1", "s0n"])
def test_bad_node_names(node: str) -> None:
    with pytest.raises(MpilabError, match="not a node name"):
        specmod.parse_node(node)


def test_spec_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "s.toml"
    os.mkfifo(fifo)
    with pytest.raises(MpilabError, match="is a FIFO"):
        specmod.load(str(fifo), "abc")


def test_an_empty_prefix_is_refused_not_replaced_by_the_environment() -> None:
    """`down --prefix ''` used to fall back to $MPILAB_TESTBED_PREFIX and remove that
    testbed."""
    p = subprocess.run([sys.executable, "-m", "mpilab.cli", "testbed", "down", "--prefix", ""],
                       capture_output=True, text=True, cwd=REPO, timeout=60,
                       env=dict(os.environ, MPILAB_TESTBED_PREFIX="zzz9"))
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        "mpilab: prefix '': must be 1-6 characters a-z0-9, starting with a letter"]
