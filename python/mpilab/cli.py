"""The `mpilab` command. Each capability registers its own subcommands."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from mpilab import __version__
from mpilab.errors import AlreadyReported, MpilabError, OneLineParser

# The subcommand each module registers with `register(subparsers)` (set_defaults(func=handler),
# where handler(args) -> int is the exit status). A command line naming one of them imports
# that module alone (a short command such as `mpilab bench` does not pay for every
# capability's imports); help and unknown names import them all.
COMMANDS = {
    "bench": "mpilab.commands.bench",
    "report": "mpilab.commands.report",
    "survey": "mpilab.commands.survey",
    "selftest": "mpilab.commands.selftest",
    "testbed": "mpilab.testbed.cli",
    "pathmig": "mpilab.pathmig.cli",
    "wavefront": "mpilab.wavefront",
    "disk": "mpilab.disk.cli",
    "compare": "mpilab.suite.cli",
    "multilane": "mpilab.multilane.cli",
    "sim": "mpilab.sim.cli",
    "slurm": "mpilab.commands.slurm",
    "tune": "mpilab.tune.cli",
    "diff": "mpilab.commands.diff",
    "history": "mpilab.commands.history",
}
COMMAND_MODULES = list(COMMANDS.values())

# The commands that can run longer than a few seconds (they launch jobs, build testbeds, run
# computations or read large documents): each runs inside mpilab.stage.command, a spinner on
# a terminal, a line on standard error every few seconds elsewhere. `survey` draws its own.
LONG_RUNNING = {
    ("bench",), ("compare",), ("diff",), ("report",), ("selftest",),
    ("tune", "sweep"), ("tune", "validate"), ("multilane", "run"), ("multilane", "report"),
    ("testbed", "up"), ("testbed", "run"), ("testbed", "check"), ("wavefront", "create"),
    ("wavefront", "convert"), ("wavefront", "run"), ("wavefront", "verify"),
    ("history", "add"), ("history", "report"),
}


def _long_running(argv: list[str]) -> str | None:
    """The name a long-running command's progress shows ("tune sweep"), or None."""
    words: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif not words and a == "--mpi":  # mpilab's own option and its value
            skip = True
        elif a.startswith("-") or len(words) == 2:
            break
        else:
            words.append(a)
    for n in (2, 1):
        if tuple(words[:n]) in LONG_RUNNING:
            return " ".join(words[:n])
    return None


_Parser = OneLineParser


def _command_named(argv: list[str]) -> str | None:
    """The subcommand a command line names (its first word that is not an option of
    `mpilab` itself), when it is one of COMMANDS."""
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a == "--mpi":
            skip = True
        elif a.startswith("-"):
            if a in ("-h", "--help", "--version"):
                return None
        else:
            return a if a in COMMANDS else None
    return None


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with argv naming a known subcommand, only that subcommand's module is
    imported and registered."""
    parser = _Parser(prog="mpilab", description=__doc__)
    parser.add_argument("--version", action="version", version=f"mpilab {__version__}")
    parser.add_argument("--mpi", metavar="NAME", dest="mpi_build",
                        help="run the tools of this checkout's build for that MPI: openmpi "
                             "(build/) or mpich (build-mpich/); sets MPILAB_BIN (default: "
                             "$MPILAB_BIN, else build/; simulated runs: --sim)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    refused: set[str] = set()
    only = _command_named(argv) if argv is not None else None
    # `mpilab --version` alone needs no command module (some import scipy: 0.6 s here)
    version = (argv is not None and only is None and "--version" in argv
               and not {"-h", "--help"} & set(argv))
    for name in [COMMANDS[only]] if only is not None else [] if version else COMMAND_MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name and (name == e.name or name.startswith(e.name + ".")):  # not built yet
                continue
            raise
        except MpilabError as e:
            # a registration refused while the module loads (a fault kind registered twice
            # or without detect): one line naming it; every other command still works
            msg = one_line(str(e))
            if msg not in refused:
                refused.add(msg)
                sys.stderr.write(f"mpilab: {msg}; refused ({name} not loaded)\n")
            continue
        mod.register(sub)
    _add_version(parser)
    return parser


def _add_version(parser: argparse.ArgumentParser) -> None:
    """--version on every subcommand (and theirs), as on `mpilab` itself."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for p in action.choices.values():
                if "--version" not in p._option_string_actions:
                    p.add_argument("--version", action="version",
                                   version=f"mpilab {__version__}")
                _add_version(p)


def one_line(msg: str) -> str:
    """The message with control characters escaped (a quoted argument may hold a newline)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in msg)


def main(argv: list[str] | None = None) -> int:
    """Run one command with standard output behind fsutil.GuardedStdout (a closed pipe ends
    it quietly with 0, a full disk or an I/O error is one line and a non-zero status), and
    flushed before the status is returned."""
    from mpilab import fsutil

    real = sys.stdout
    sys.stdout = fsutil.GuardedStdout(real)  # type: ignore[assignment]
    try:
        try:
            status = _main(argv)
        except MpilabError as e:  # standard output failed while argparse wrote to it
            sys.stderr.write(f"mpilab: {one_line(str(e))}\n")
            return 2
        except SystemExit as e:  # --help, --version, usage errors, a closed pipe
            try:
                sys.stdout.flush()
            except MpilabError as err:
                sys.stderr.write(f"mpilab: {one_line(str(err))}\n")
                raise SystemExit(e.code or 1) from None
            raise
        try:
            sys.stdout.flush()
        except MpilabError as e:
            sys.stderr.write(f"mpilab: {one_line(str(e))}\n")
            return status or 1
        return status
    finally:
        sys.stdout = real


def _main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        sys.stderr.write("mpilab: error: no command given (mpilab --help lists them)\n")
        return 2
    try:
        # dest mpi_build: subcommands have --mpi options of their own (testbed run --mpi)
        if getattr(args, "mpi_build", None) is not None:
            from mpilab.tools import select_mpi

            select_mpi(args.mpi_build)
        name = _long_running(argv)
        if name is None:
            return int(args.func(args) or 0)
        from mpilab import stage

        with stage.command(name, quiet=bool(getattr(args, "quiet", False))):
            return int(args.func(args) or 0)
    except AlreadyReported as e:
        return e.status
    except MpilabError as e:
        sys.stderr.write(f"mpilab: {one_line(str(e))}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("mpilab: interrupted\n")
        return 130
    except MemoryError:
        sys.stderr.write("mpilab: out of memory\n")
        return 2
    except Exception as e:  # a bug: still one line; MPILAB_DEBUG=1 shows the traceback
        if os.environ.get("MPILAB_DEBUG"):
            raise
        where = ""
        tb = e.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is not None:
            where = f" at {os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
        msg = one_line(" ".join(str(e).split()))[:200]
        sys.stderr.write(f"mpilab: internal error ({type(e).__name__}{where}): {msg} "
                         "(a bug: please report it; MPILAB_DEBUG=1 shows the traceback)\n")
        return 70


if __name__ == "__main__":
    sys.exit(main())
