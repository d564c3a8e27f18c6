"""Fail points (`configureFailPoint`), as MongoDB's test builds provide them: `failCommand` and
`failGetMoreAfterCursorCheckout`, with modes alwaysOn / off / {times} / {skip} / {activationProbability}."""

from __future__ import annotations

import random

from devstack.mongo.bsonutil import to_int
from devstack.mongo.errors import CommandError

SUPPORTED = {"failCommand", "failGetMoreAfterCursorCheckout"}


class FailPoint:
    def __init__(self, name: str):
        self.name = name
        self.mode = "off"
        self.times = None
        self.skip = 0
        self.probability = None
        self.data: dict = {}
        self.hits = 0

    def configure(self, mode, data):
        if mode == "alwaysOn":
            self.mode, self.times, self.skip, self.probability = "on", None, 0, None
        elif mode == "off":
            self.mode = "off"
        elif isinstance(mode, dict):
            self.mode, self.times, self.skip, self.probability = "on", None, 0, None
            if "times" in mode:
                self.times = to_int(mode["times"])
                if self.times is None or self.times < 0:
                    raise CommandError(2, "'times' option to 'mode' must be positive")
                if self.times == 0:
                    self.mode = "off"
            elif "skip" in mode:
                self.skip = to_int(mode["skip"]) or 0
            elif "activationProbability" in mode:
                self.probability = float(mode["activationProbability"])
            else:
                raise CommandError(2, "'mode' must be one of 'off', 'alwaysOn', 'times', and 'activationProbability'")
        else:
            raise CommandError(2, "'mode' must be one of 'off', 'alwaysOn', 'times', and 'activationProbability'")
        self.data = dict(data or {})

    def should_fire(self) -> bool:
        if self.mode != "on":
            return False
        if self.skip > 0:
            self.skip -= 1
            return False
        if self.probability is not None and random.random() >= self.probability:
            return False
        self.hits += 1
        if self.times is not None:
            self.times -= 1
            if self.times <= 0:
                self.mode = "off"
        return True


class FailPoints:
    """The fail points of one member."""

    def __init__(self):
        self.points: dict[str, FailPoint] = {}

    def configure(self, name: str, mode, data) -> int:
        if name not in SUPPORTED:
            raise CommandError(2, f"Cannot find failpoint: {name}", code_name_override="BadValue")
        fp = self.points.setdefault(name, FailPoint(name))
        before = fp.hits
        fp.configure(mode, data)
        return before

    def fail_command(self, command: str, app_name: str | None, is_internal: bool = False):
        """The failCommand data if it fires for this command, else None."""
        fp = self.points.get("failCommand")
        if fp is None or fp.mode != "on":
            return None
        data = fp.data
        names = data.get("failCommands") or []
        if command not in names:
            return None
        if "appName" in data and data["appName"] != app_name:
            return None
        if is_internal and not data.get("failInternalCommands"):
            return None
        if not fp.should_fire():
            return None
        return data

    def fail_getmore(self):
        fp = self.points.get("failGetMoreAfterCursorCheckout")
        if fp is None or fp.mode != "on":
            return None
        if not fp.should_fire():
            return None
        return fp.data

    def clear(self):
        self.points.clear()
