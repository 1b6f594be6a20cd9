"""The promotion threshold, shared by the healer and the Deployer's judge.

A repair whose healer is less confident than LOW_CONFIDENCE is staged for a person, never promoted
(`judge`); the built-in healer's corroboration raises a low-confidence heal to it and never above
(`heal.verdict.corroboration`). It lives below both, so that neither imports the other.
"""

from __future__ import annotations

LOW_CONFIDENCE = 0.75     # a healer's confidence below this stages the candidate for a person
