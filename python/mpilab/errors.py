"""The one error type every mpilab command turns into a one-line message."""


class MpilabError(Exception):
    """Bad input or a failed step. The message is one line, naming what and where
    (file:line for parsed files). The CLI prints it and exits non-zero."""
