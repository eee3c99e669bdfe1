"""Simulated runs record the network model and correction factors in effect
(provenance.simulated.network) and say, on stderr and in the file, when a fit ran on
SimGrid's calibrated SMPI factors: a platform without a <config> gave alpha 200.5 us for two
100 us links and no word about why."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mpilab.sim import platform as plat
from mpilab.sim import run as simrun
from mpilab.tools import REPO

SMPI_BENCH = REPO / "build-smpi" / "bin" / "mpilab-bench"
needs_smpi = pytest.mark.skipif(
    shutil.which("smpirun") is None or not SMPI_BENCH.is_file(),
    reason="no SMPI build (scripts/build --smpi) or no smpirun")

BARE = b"""<?xml version="1.0"?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="z" routing="Full">
<host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>
<link id="l" bandwidth="125MBps" latency="100us"/>
<route src="a" dst="b"><link_ctn id="l"/></route></zone></platform>
"""


def _with_exact(data: bytes) -> bytes:
    """The platform with the <config> `mpilab sim platform --factors exact` writes."""
    props = b"".join(f'<prop id="{k}" value="{v}"/>'.encode()
                     for k, v in plat.EXACT_CONFIG.items())
    return data.replace(b'<zone id="z"', b"<config>" + props + b'</config><zone id="z"')


def test_a_platform_without_config_runs_on_calibrated_factors() -> None:
    net = simrun.network_in_effect(plat.configs_of(BARE), simrun.SMPI_CONFIG)
    assert net["model"] == "SMPI"
    assert net["factors"]["smpi/lat-factor"].endswith("0:2.01467")
    assert net["source"]["smpi/bw-factor"] == "SimGrid default"
    assert net["flags"] == [simrun.FLAG_CALIBRATED, simrun.FLAG_CROSSTRAFFIC]
    line = simrun.calibrated_warning({"platform": "bare.xml", "network": net})
    assert line is not None and "\n" not in line and "calibrated_factors" in line


def test_exact_config_and_command_line_override() -> None:
    cfg = plat.configs_of(_with_exact(BARE))
    net = simrun.network_in_effect(cfg, simrun.SMPI_CONFIG)
    assert net["flags"] == [] and net["source"]["smpi/bw-factor"] == "platform <config>"
    assert simrun.calibrated_warning({"network": net}) is None
    # --cfg wins over the platform (SimGrid's rule): factors back on, said so
    net = simrun.network_in_effect(cfg, [*simrun.SMPI_CONFIG, "--cfg=smpi/bw-factor:0:0.5"])
    assert net["source"]["smpi/bw-factor"] == "--cfg"
    assert simrun.FLAG_CALIBRATED in net["flags"]
    # another network model: the SMPI factors do not apply
    net = simrun.network_in_effect({}, ["--cfg=network/model:CM02", "--cfg=network/crosstraffic:0"])
    assert net["model"] == "CM02" and net["flags"] == []
    # the model itself is smpirun's unless --cfg sets it: SimGrid keeps smpirun's
    # --cfg=network/model:SMPI over a platform's <config> (a ns-3 platform ran the flow model)
    net = simrun.network_in_effect({"network/model": "ns-3"}, simrun.SMPI_CONFIG)
    assert net["model"] == "SMPI" and net["source"]["network/model"] == "smpirun"
    net = simrun.network_in_effect({"network/model": "ns-3"},
                                   [*simrun.SMPI_CONFIG, "--cfg=network/model:ns-3"])
    assert net["model"] == "ns-3" and net["source"]["network/model"] == "--cfg"


def test_describe_names_the_factors() -> None:
    net = simrun.network_in_effect({}, simrun.SMPI_CONFIG)
    text = simrun.describe({"platform": "p.xml", "ranks": 2, "hosts": 2, "network": net})
    assert "[calibrated_factors]" in text and "[crosstraffic]" in text and "SMPI" in text


@needs_smpi
@pytest.mark.parametrize("exact", [False, True])
def test_simulated_fit_warns_on_calibrated_factors(run_cli: Callable[..., Any], tmp_path: Path,
                                                   exact: bool) -> None:
    """The issue's platform (two hosts, one 100 us 125 MB/s link): without a <config> the
    fit runs on SimGrid's factors (one warning line, the flag in the file); with
    `mpilab sim platform --factors exact`'s config appended, neither."""
    (tmp_path / "two.xml").write_bytes(_with_exact(BARE) if exact else BARE)
    p = run_cli("bench", "--sim", "two.xml", "--out", "sim.json", "--", "--ops", "p2p",
                "--sizes", "0,1K,64K", "--models", "hockney", "--quiet")
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "sim.json").read_text())
    net = doc["provenance"]["simulated"]["network"]
    warned = [ln for ln in p.stderr.splitlines() if "calibrated_factors" in ln]
    if exact:
        assert net["flags"] == [] and warned == []
        (pair,) = doc["models"]["hockney"]["pairs"]
        assert pair["alpha"] == pytest.approx(100e-6, rel=1e-3)
    else:
        assert simrun.FLAG_CALIBRATED in net["flags"] and len(warned) == 1
        assert net["factors"]["smpi/lat-factor"] == simrun.SIMGRID_NETWORK_DEFAULTS[
            "smpi/lat-factor"]
