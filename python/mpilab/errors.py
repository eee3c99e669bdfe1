"""The one error type every mpilab command turns into a one-line message."""


class MpilabError(Exception):
    """Bad input or a failed step. The message is one line, naming what and where
    (file:line for parsed files). The CLI prints it and exits non-zero."""


class AlreadyReported(MpilabError):
    """A step failed and has already said why in its own one line (a C tool refusing bad
    input inside a job, exit status 2): the CLI exits with `status` and adds nothing."""

    def __init__(self, status: int = 2) -> None:
        super().__init__("")
        self.status = status
