"""Why a request to the student's process gave no value: ``StudentCodeError``, as data.

It carries what kind of failure it was (``Failure``), the catalogue's reason (a ``messages.Message``: the code and
its fields, turned into Korean only where a student reads it) and, when the student's code raised, the name of the
exception type it raised. Nobody reads any of it back out of the Korean text.

Example:
    >>> try:
    ...     process.calls.call("f", x)
    ... except StudentCodeError as exc:
    ...     exc.kind, exc.code, exc.exception
    (<Failure.EXCEPTION: 'exception'>, <Reason.EXCEPTION: ...>, 'ValueError')
"""
from __future__ import annotations

import signal
from enum import Enum

from autograder.messages import Message, Reason


class Failure(Enum):
    """The kind of a ``StudentCodeError`` (its value is the word a cell's status shows for it)."""

    TIMEOUT = "timeout"                 # past its time limit: the call's, a cell's, the notebook's or the submission's
    CRASHED = "crashed"                 # the process ended (a signal, an exit code) or none is left to ask
    PROTOCOL = "protocol"               # a reply that breaks the wire format or its limits, or answers no request
    TAMPERED = "tampered"               # the event pipe was closed, or written with what the monitor never writes
    MISSING = "missing"                 # the name asked for is not defined in the notebook
    NOT_IMPLEMENTED = "not_implemented"  # the student's code raised NotImplementedError (the release's stub)
    EXCEPTION = "exception"             # the student's code raised another exception
    BROKEN = "broken"                   # not called again: an earlier call of the same function timed out or crashed
    TYPE = "type"                       # a reply value of a type the grader does not take (an array not numeric)


class StudentCodeError(Exception):
    """A request to the student's process did not produce a value.

    Args:
        kind: what kind of failure (``Failure``).
        reason: why, as the catalogue's code with its fields (``Reason.CALL_TIMEOUT(seconds=2)``).
        detail: for the log: what the process printed last (a crash), or where the student's code raised.
        exception: the name of the exception type the student's code raised (``"ValueError"``), when it raised
            (``Failure.EXCEPTION``, ``Failure.NOT_IMPLEMENTED``); None otherwise.

    ``code`` is the reason's code, ``message`` its Korean text (what the student reads).
    """

    def __init__(self, kind: Failure, reason: Message, detail: str = "", exception: str | None = None):
        super().__init__(reason.korean)
        self.kind, self.reason, self.detail, self.exception = kind, reason, detail, exception

    @property
    def code(self) -> Reason:
        return self.reason.code

    @property
    def message(self) -> str:
        return self.reason.korean


def crash_reason(code: int | None) -> Message:
    """Why the process ended, from its exit status (a negative one: the signal that ended it)."""
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        if name == "SIGXCPU":
            return Reason.CPU_TIME()
        return Reason.SIGNAL(signal=name)
    return Reason.EXIT_CODE(code=code)


def exception_reason(error: str, message: str = "") -> Message:
    """The reason a student reads for an exception of type ``error`` raised by their code with ``message``."""
    if error == "NotImplementedError":
        return Reason.NOT_IMPLEMENTED()
    if error == "MemoryError":
        return Reason.MEMORY_ERROR()
    return Reason.EXCEPTION(error=f"{error}: {message}" if message else error)


def from_reply(reply: dict) -> StudentCodeError:
    """The error of a reply whose ``ok`` is false: the name was missing, or the student's code raised."""
    error = reply.get("error", "Exception")
    if error == "Missing":
        return StudentCodeError(Failure.MISSING, Reason.UNDEFINED_NAME(name=reply.get("message")))
    kind = Failure.NOT_IMPLEMENTED if error == "NotImplementedError" else Failure.EXCEPTION
    return StudentCodeError(kind, exception_reason(error, reply.get("message", "")),
                            "\n".join(reply.get("where", [])), exception=str(error))
