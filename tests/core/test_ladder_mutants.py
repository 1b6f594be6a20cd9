"""The healing ladder's external rung (healerd.core.ladder): an outcome a mutation found no test for.

A healer that answered with an error in cycle 1 was called: that is a failed try, not a pause. When
the daily budget then stops cycle 2, the attempt is rejected (and spent); only a budget spent before
any call pauses the task without spending an attempt.
"""

from __future__ import annotations

import pytest

from healerd.core.ladder.ports import LadderSettings
from tests.support.ladder_fakes import Answer, World

PAUSED = "external: paused: the daily budget of external healer calls for stats is spent (1)"


@pytest.mark.parametrize("kind", ["error", "timeout", "bad_response"])
def test_a_healer_error_in_cycle_1_then_the_daily_budget_in_cycle_2_is_a_rejected_attempt(kind):
    w = World(settings=LadderSettings(ladder=("external",), healer_cycles=3, healer_timeouts=(1, 2, 3),
                                      daily_budget_per_source=1),
              answers=[Answer(False, kind, "HTTP 500 from the healer")])
    got = w.treat(task_id=5)
    assert got["outcome"] == "rejected" and got["strategy"] == "external"
    assert got["reason"] == f"external cycle 1: {kind}: HTTP 500 from the healer; {PAUSED}"
    assert len(w.healer_asked) == 1 and w.deploys == []
    assert w.tasks == [("complete", 5, {"outcome": "rejected"})], "completed, not released for later"
    assert w.last_fix["outcome"] == "rejected" and w.last_fix["strategy"] == "external"
    assert [a["event"] for a in w.alerts] == ["BUDGET_PAUSED"]
    assert w.alerts[0]["details"]["cycle"] == 2
