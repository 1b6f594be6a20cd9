"""The daemon's configuration (healerd/config.py): defaults, durations, environment, refusals."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

import pytest

from healerd import __version__
from healerd.config import DEFAULT_USER_AGENT, Config, ConfigError, DaemonSection, from_dict, load
from tests.support.paths import ROOT


@pytest.fixture(autouse=True)
def no_healer_env(monkeypatch):
    monkeypatch.delenv("CODE_HEALER_URL", raising=False)
    monkeypatch.delenv("CODE_HEALER_TOKEN", raising=False)


def toml_block(markdown: str, after: str) -> dict:
    """The first ```toml block after the heading `after`, parsed."""
    text = markdown.split(after, 1)[1]
    block = re.search(r"```toml\n(.*?)```", text, flags=re.S).group(1)
    return tomllib.loads(block)


def write(tmp_path: Path, text: str) -> str:
    p = tmp_path / "healerd.toml"
    p.write_text(text)
    return str(p)


# -- defaults ----------------------------------------------------------------------------------

# The documented configuration keys (README.md, "Configuration reference"), each with its default.
DOCUMENTED_DEFAULTS = {
    ("daemon", "scrapers"): 8,
    ("fetch", "timeout"): 20.0,
    ("fetch", "max_bytes"): 10_000_000,
    ("fetch", "per_host_concurrency"): 2,
    ("fetch", "respect_robots"): True,
    ("doctor", "max_fix_attempts"): 3,
    ("doctor", "attempt_window"): 86400.0,
    ("doctor", "quarantine_for"): 86400.0,
    ("doctor", "systemic_threshold"): 3,
    ("doctor", "ladder"): ("memory", "builtin", "external"),
    ("doctor", "dead_after"): 7 * 86400.0,
    ("healer", "url"): "",
    ("healer", "token"): "",
    ("healer", "timeouts"): (30.0, 45.0, 60.0, 90.0, 120.0),
    ("healer", "kind"): "code-healer",
    ("alerts", "webhook"): "",
}


def test_the_defaults_are_the_documented_ones():
    cfg = Config()
    for (section, key), value in DOCUMENTED_DEFAULTS.items():
        assert getattr(getattr(cfg, section), key) == value, f"[{section}] {key}"
    assert cfg.daemon.sources_dir is None  # optional: no sources directory unless given
    assert DEFAULT_USER_AGENT.startswith(f"healerd/{__version__} (+") and DEFAULT_USER_AGENT.endswith(")")
    assert cfg.fetch.user_agent == DEFAULT_USER_AGENT


def test_the_readmes_config_reference_lists_every_key_and_no_other():
    """Every setting healerd reads is documented, and the reference names no setting it ignores."""
    import dataclasses

    data = toml_block((ROOT / "README.md").read_text(), "## Configuration reference")
    listed = {(s, k) for s, keys in data.items() for k in keys}
    cfg = Config()
    known = {(s.name, f.name) for s in dataclasses.fields(cfg) if dataclasses.is_dataclass(getattr(cfg, s.name))
             for f in dataclasses.fields(getattr(cfg, s.name))}   # [[feeds]] (a list) is documented on its own
    assert listed == known
    assert set(DOCUMENTED_DEFAULTS) <= listed


def test_the_readmes_config_reference_is_exactly_the_defaults():
    data = toml_block((ROOT / "README.md").read_text(), "## Configuration reference")
    for key in ("sources_dir", "socket_group"):  # examples of optional settings
        data["daemon"].pop(key)
    data["fetch"].pop("user_agent")
    assert from_dict(data) == Config()


def test_load_without_a_file_gives_the_defaults():
    assert load(None) == Config() and load("") == Config()
    assert from_dict({}) == Config()


def test_an_empty_file_gives_the_defaults(tmp_path):
    assert load(write(tmp_path, "")) == Config()


def test_a_file_sets_only_what_it_names(tmp_path):
    cfg = load(write(tmp_path, '[daemon]\nscrapers = 2\n[doctor]\nquarantine_for = "2h"\n'))
    assert cfg.daemon.scrapers == 2 and cfg.doctor.quarantine_for == 7200.0
    assert cfg.daemon == dataclasses.replace(DaemonSection(), scrapers=2)
    assert cfg.doctor.attempt_window == 86400.0 and cfg.fetch == Config().fetch


# -- durations ---------------------------------------------------------------------------------

DURATION_KEYS = [("daemon", "politeness_delay"), ("daemon", "tick"), ("fetch", "timeout"),
                 ("fetch", "connect_timeout"), ("doctor", "attempt_window"), ("doctor", "quarantine_for"),
                 ("doctor", "systemic_window"), ("doctor", "dead_after"), ("doctor", "review_window"),
                 ("doctor", "timeout_backoff"), ("alerts", "dedupe_window")]


@pytest.mark.parametrize("value, seconds", [
    (90, 90.0), (0, 0.0), (2.5, 2.5), ("90", 90.0), ("45s", 45.0), ("2m", 120.0), ("1.5h", 5400.0),
    ("7d", 604800.0), (" 15m ", 900.0), ("0.05s", 0.05), ("3 h", 10800.0),
])
def test_durations_take_seconds_and_suffixes(value, seconds):
    for section, key in DURATION_KEYS:
        cfg = from_dict({section: {key: value}})
        got = getattr(getattr(cfg, section), key)
        assert got == pytest.approx(seconds) and isinstance(got, float), f"[{section}] {key}"


@pytest.mark.parametrize("value", ["5 minutes", "1h30m", "-5s", -5, "", "10ms", "h", True, [30], "1e3"])
def test_a_bad_duration_names_its_key(value):
    for section, key in DURATION_KEYS:
        with pytest.raises(ConfigError) as exc:
            from_dict({section: {key: value}})
        assert f"[{section}] {key}" in str(exc.value)


def test_healer_timeouts_are_durations_too():
    assert from_dict({"healer": {"timeouts": [10, "20s", "1m", 2.5]}}).healer.timeouts == (10.0, 20.0, 60.0, 2.5)
    with pytest.raises(ConfigError, match=r"\[healer\] timeouts"):
        from_dict({"healer": {"timeouts": ["30s", "soon"]}})
    with pytest.raises(ConfigError, match=r"\[healer\] timeouts: expected a list"):
        from_dict({"healer": {"timeouts": "30s"}})
    with pytest.raises(ConfigError, match=r"\[healer\] timeouts: at least one timeout"):
        from_dict({"healer": {"timeouts": []}})


# -- environment -------------------------------------------------------------------------------

def test_env_sets_the_healer_url_and_token(monkeypatch, tmp_path):
    monkeypatch.setenv("CODE_HEALER_URL", "http://127.0.0.1:3000/api/heal")
    monkeypatch.setenv("CODE_HEALER_TOKEN", "s3cret")
    for cfg in (load(None), load(write(tmp_path, '[healer]\nurl = "http://file/heal"\ntoken = "from-file"\n'))):
        assert cfg.healer.url == "http://127.0.0.1:3000/api/heal"
        assert cfg.healer.token == "s3cret"


def test_env_applies_one_key_at_a_time(monkeypatch, tmp_path):
    monkeypatch.setenv("CODE_HEALER_TOKEN", "only-the-token")
    cfg = load(write(tmp_path, '[healer]\nurl = "https://file/heal"\ntimeouts = [5]\n'))
    assert (cfg.healer.url, cfg.healer.token, cfg.healer.timeouts) == ("https://file/heal", "only-the-token", (5.0,))


def test_an_empty_env_var_does_not_override(monkeypatch, tmp_path):
    monkeypatch.setenv("CODE_HEALER_URL", "")
    assert load(write(tmp_path, '[healer]\nurl = "http://file/heal"\n')).healer.url == "http://file/heal"


def test_without_env_the_file_wins(tmp_path):
    cfg = load(write(tmp_path, '[healer]\nurl = "https://file/heal"\ntoken = "t"\n'))
    assert (cfg.healer.url, cfg.healer.token) == ("https://file/heal", "t")


# -- refusals ----------------------------------------------------------------------------------

def refused(data: dict) -> str:
    with pytest.raises(ConfigError) as exc:
        from_dict(data)
    return str(exc.value)


def test_an_unknown_section_is_refused_by_name():
    msg = refused({"doctr": {"max_fix_attempts": 1}})
    assert msg.startswith("[doctr]: unknown section") and "doctor" in msg


def test_an_unknown_key_is_refused_by_name():
    msg = refused({"doctor": {"max_fix_attempt": 1}})
    assert msg.startswith("[doctor] max_fix_attempt: unknown key") and "max_fix_attempts" in msg


def test_a_section_must_be_a_table():
    assert refused({"daemon": 8}) == "[daemon]: expected a table"


@pytest.mark.parametrize("section, key, value, words", [
    ("daemon", "scrapers", "8", "expected a whole number"),
    ("daemon", "scrapers", 2.5, "expected a whole number"),
    ("daemon", "scrapers", -1, "expected a whole number"),
    ("daemon", "scrapers", True, "expected a whole number"),
    ("daemon", "scrapers", 0, "at least 1"),
    ("daemon", "sources_max_bytes", 0, "at least 1"),
    ("daemon", "records_retention", "all", "expected a whole number"),
    ("daemon", "jitter", "10%", "expected a number"),
    ("daemon", "log_level", 10, "expected a string"),
    ("daemon", "log_level", "LOUD", "expected one of"),
    ("daemon", "sources_dir", 5, "expected a string"),
    ("fetch", "respect_robots", "yes", "expected true or false"),
    ("fetch", "respect_robots", 1, "expected true or false"),
    ("fetch", "per_host_concurrency", 0, "at least 1"),
    ("fetch", "max_bytes", "10MB", "expected a whole number"),
    ("fetch", "user_agent", ["bot"], "expected a string"),
    ("doctor", "enabled", "false", "expected true or false"),
    ("doctor", "max_fix_attempts", 3.0, "expected a whole number"),
    ("healer", "kind", "gpt", "expected \"code-healer\" or \"openai\""),
    ("healer", "url", None, "expected a string"),
    ("alerts", "webhook", 80, "expected a string"),
    ("alerts", "webhook", "http://[::1/hook", "expected an http:// or https:// URL"),
    ("alerts", "webhook", "ftp://hooks.example/x", "expected an http:// or https:// URL"),
    ("alerts", "webhook", "hooks.example/x", "expected an http:// or https:// URL"),
])
def test_a_bad_value_is_refused_naming_its_key(section, key, value, words):
    msg = refused({section: {key: value}})
    assert msg.startswith(f"[{section}] {key}"), msg
    assert words in msg


def test_log_levels_are_case_blind():
    assert from_dict({"daemon": {"log_level": "debug"}}).daemon.log_level == "debug"
    assert from_dict({"daemon": {"log_level": "WARNING"}}).daemon.log_level == "WARNING"


def test_a_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


def test_load_refuses_a_missing_or_broken_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file"):
        load(str(tmp_path / "nope.toml"))
    with pytest.raises(ConfigError, match="is not valid TOML"):
        load(write(tmp_path, "[daemon\nscrapers = 2\n"))
    with pytest.raises(ConfigError, match=r"^\[daemon\] scrapers"):
        load(write(tmp_path, '[daemon]\nscrapers = "many"\n'))


# -- the ladder --------------------------------------------------------------------------------

@pytest.mark.parametrize("ladder", [["memory", "builtin", "external"], ["external"], ["builtin", "memory"], []])
def test_a_ladder_of_known_rungs_keeps_its_order(ladder):
    assert from_dict({"doctor": {"ladder": ladder}}).doctor.ladder == tuple(ladder)


@pytest.mark.parametrize("ladder, words", [
    (["memory", "llm"], "unknown rung 'llm'"),
    (["Builtin"], "unknown rung 'Builtin'"),
    ([1], "unknown rung 1"),
    (["builtin", "external", "builtin"], "the rung 'builtin' appears more than once"),
])
def test_a_bad_ladder_is_refused(ladder, words):
    msg = refused({"doctor": {"ladder": ladder}})
    assert msg.startswith("[doctor] ladder: ") and words in msg
    assert "memory, builtin, external" in msg or "more than once" in msg


def test_a_ladder_must_be_a_list():
    assert refused({"doctor": {"ladder": "builtin"}}).startswith("[doctor] ladder: expected a list")


def test_config_is_immutable():
    cfg = Config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.daemon.scrapers = 1


def test_probation_is_a_whole_number_of_scrapes_at_least_one():
    assert Config().doctor.probation == 3
    assert from_dict({"doctor": {"probation": 5}}).doctor.probation == 5
    for bad in (0, -1, "3", 2.5):
        with pytest.raises(ConfigError, match=r"\[doctor\] probation"):
            from_dict({"doctor": {"probation": bad}})
