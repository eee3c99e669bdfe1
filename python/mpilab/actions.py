"""`mpilab GROUP ACTION` command groups (disk, pathmig, testbed): the group's parser, whose
run without an action is one line, and a function that adds an action carrying the group's
`--prefix` option."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from mpilab.errors import no_action

AddAction = Callable[[str, Callable[[argparse.Namespace], int], str], argparse.ArgumentParser]


def group(subparsers: Any, name: str, help: str, prefix_help: str) -> AddAction:
    """Register `mpilab NAME` (dest NAME_command) and return add(action, func, help)."""
    top = subparsers.add_parser(name, help=help)
    sub = top.add_subparsers(dest=f"{name}_command", metavar="ACTION", parser_class=type(top))
    top.set_defaults(func=no_action(name))

    def add(action: str, func: Callable[[argparse.Namespace], int],
            help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(action, help=help)
        p.add_argument("--prefix", help=prefix_help)
        p.set_defaults(func=func)
        return p

    return add
