"""The Doctor hands the healing ladder what it reads of the configuration, and nothing else."""

from __future__ import annotations

from healerd.actors.doctor import ladder_settings
from healerd.config import Config, from_dict
from healerd.core.extract import PageLimits
from healerd.core.ladder.ports import LadderSettings


def test_the_ladder_s_defaults_are_the_configuration_s():
    assert ladder_settings(Config()) == LadderSettings()


def test_each_setting_comes_from_its_key():
    cfg = from_dict({"doctor": {"enabled": False, "max_fix_attempts": 7, "attempt_window": "2h",
                                "ladder": ["external", "builtin"]},
                     "healer": {"url": "http://127.0.0.1:9/heal", "kind": "openai", "model": "m", "cycles": 2,
                                "timeouts": [3, 4, 5], "daily_budget_per_source": 4, "daily_budget_total": 9},
                     "fetch": {"max_items": 11, "max_elements": 12, "max_depth": 13}})
    assert ladder_settings(cfg) == LadderSettings(
        enabled=False, max_fix_attempts=7, attempt_window=7200.0, ladder=("external", "builtin"),
        healer_configured=True, healer_kind="openai", healer_cycles=2, healer_timeouts=(3.0, 4.0, 5.0),
        daily_budget_per_source=4, daily_budget_total=9, limits=PageLimits(max_items=11, max_elements=12, max_depth=13))
