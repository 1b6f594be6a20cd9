"""A clock a test moves by hand, for the parts that take a `clock` callable."""

from __future__ import annotations


class Clock:
    """`clock()` is `clock.t`; `advance` (or setting `t`) moves it."""

    def __init__(self, t: float = 100.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float = 1.0) -> float:
        self.t += seconds
        return self.t
