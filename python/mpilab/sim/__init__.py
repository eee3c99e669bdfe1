"""Simulated clusters on SimGrid SMPI: platform files (platform.py) and simulated runs (run.py)."""
