"""Command handlers, registered by name with what they need from the member (primary, secondaryOk...)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class CommandInfo:
    name: str
    handler: Callable
    kind: str = "any"            # "any" (runs anywhere), "read" (primary or secondaryOk), "write" (primary)
    txn: bool = False            # allowed inside a multi-document transaction
    retryable_write: bool = False
    aliases: tuple = field(default_factory=tuple)


COMMANDS: dict[str, CommandInfo] = {}


def command(name: str, kind: str = "any", txn: bool = False, retryable_write: bool = False, aliases=()):
    def register(fn):
        info = CommandInfo(name, fn, kind, txn, retryable_write, tuple(aliases))
        COMMANDS[name] = info
        for alias in aliases:
            COMMANDS[alias] = info
        return fn
    return register


def load():
    from devstack.mongo.commands import admin, crud, ddl, query, repl, sessions  # noqa: F401
