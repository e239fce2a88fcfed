"""Errors with meaning: bad input (exit 2, one line) versus a test that failed (data, not an error)."""

from __future__ import annotations


class InputError(Exception):
    """Bad user input. The CLI prints `str(err)` on one line and exits 2.

    `where` names the file or field path (`cert.yaml: spec.categories[1].options.maxBytes`),
    `message` says what is wrong and, where possible, how to fix it.
    """

    def __init__(self, message: str, where: str = "") -> None:
        self.where = where
        self.message = " ".join(str(message).split())  # one line, always
        super().__init__(f"{where}: {self.message}" if where else self.message)


class TransientError(Exception):
    """A cluster API hiccup worth retrying (5xx, connection reset); never a failed test."""


class UnsupportedConstruct(Exception):
    """The local executor met an Argo construct it does not implement: an explicit error, never a silent skip."""


__all__ = ["InputError", "TransientError", "UnsupportedConstruct"]
