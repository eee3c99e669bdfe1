"""The `mpilab` command. Each capability registers its own subcommands."""

from __future__ import annotations

import argparse
import importlib
import sys

from mpilab import __version__
from mpilab.errors import MpilabError

# Modules exposing `register(subparsers)`; each adds its subcommand(s) with
# set_defaults(func=handler), where handler(args) -> int is the exit status.
COMMAND_MODULES = [
    "mpilab.commands.bench",
    "mpilab.commands.report",
    "mpilab.commands.survey",
    "mpilab.testbed.cli",
    "mpilab.pathmig.cli",
    "mpilab.wavefront",
    "mpilab.suite.cli",
]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # one line, non-zero exit
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mpilab", description=__doc__)
    parser.add_argument("--version", action="version", version=f"mpilab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name and (name == e.name or name.startswith(e.name + ".")):  # not built yet
                continue
            raise
        mod.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except MpilabError as e:
        sys.stderr.write(f"mpilab: {e}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("mpilab: interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
