"""The one exception tree of logkit.

Library code raises these; only ``logkit.cli`` turns them into a message and an exit code.
Every message says what failed, shows the offending value or ``file:line``, and names the fix.
"""

from __future__ import annotations

__all__ = ["BadInput", "LogkitError", "NotFound", "SchemaTooNew", "StoreError"]


class LogkitError(Exception):
    """Base of every error logkit reports to a user."""

    exit_code = 2

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message}\n  fix: {self.fix}" if self.fix else self.message


class BadInput(LogkitError):
    """A file, flag or value given by the user cannot be used."""


class NotFound(LogkitError):
    """A session, attempt, hypothesis or decision that was named does not exist."""


class StoreError(LogkitError):
    """The session store cannot be read or written."""


class SchemaTooNew(StoreError):
    """A file was written by a newer logkit than this one."""
