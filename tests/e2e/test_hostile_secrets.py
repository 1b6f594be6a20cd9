"""Secrets masked everywhere a person or a file sees them: one masking module, one mask_url,
one threshold; every healerctl output and the database's fix history and alerts searched for
a source's planted secret values."""

from __future__ import annotations

import json

import apsw
import pytest

import healerd.adapters.external
import healerd.adapters.fetch
from healerd.config import Config, HealerSection
from healerd.core import sanitize
from healerd.core.sanitize import MASK, Secret, mask_text, mask_url, secret_values, source_secrets
from tests.support.sitepages import LISTING_BP, listing_v1, listing_v2, write_blueprint


@pytest.mark.parametrize("value, kept", [("k7Q", False), ("k7Q2", True), ("k7Q2z", True)])
def test_short_secret_boundary(value, kept):
    """A value kept as a secret is masked; 4 characters is the one threshold for both."""
    found = source_secrets({"Authorization": f"Bearer {value}"}, {"sid": value})
    assert (value in found) is kept
    text = f"the page says {value} here"
    masked = mask_text(text, found)
    assert (value not in masked) is kept
    if kept:
        assert masked == f"the page says {MASK} here"


def test_secret_values_take_url_credentials_and_secret_query_values():
    got = secret_values("https://bob:pw4Z@h.example/x?api_key=AKv9&page=2&token=T0k3n", {"X-Api-Key": "k-77Q"},
                        {"sid": "k7Q2"})
    assert {"pw4Z", "AKv9", "T0k3n", "k-77Q", "k7Q2"} <= set(got)
    assert "page" not in got and "2" not in got and "bob" not in got   # 3 characters: under the threshold


def test_one_mask_url():
    assert healerd.adapters.fetch.mask_url is sanitize.mask_url
    assert healerd.adapters.external.mask_url is sanitize.mask_url
    # The one rule: secret-named parameters by word (code, sig, token) masked, author kept.
    assert mask_url("http://h/cb?code=abc&author=ann&monkey=1&sig=zz") == \
        "http://h/cb?code=***&author=ann&monkey=1&sig=***"


def test_repr_of_config_never_shows_the_healer_token():
    c = Config(healer=HealerSection(token="tok-VERY-secret-1"))
    for shown in (repr(c), str(c), f"{c}", repr(c.healer), f"{c.healer.token}", str(c.healer.token)):
        assert "tok-VERY-secret-1" not in shown
    assert isinstance(c.healer.token, Secret) and c.healer.token.reveal() == "tok-VERY-secret-1"
    assert c == Config(healer=HealerSection(token="tok-VERY-secret-1"))


COOKIE = "k7Q2"                     # 4 characters: the boundary
HEADER = "Bearer zz9-Hdr-Secret"
API_KEY = "AKv9x2"
TOKEN = "T0k3nQ"
PLANTED = (COOKIE, "zz9-Hdr-Secret", API_KEY, TOKEN, "Xk-555")


def _echo(page: str) -> str:
    """The page echoes what it was sent, as some sites do (a debug footer)."""
    return page.replace("</body>", f"<footer>session {COOKIE}; auth {HEADER}; key {API_KEY}; t {TOKEN}; "
                                   f"x Xk-555</footer></body>")


def test_no_output_and_no_fix_record_carries_a_planted_secret(site, daemon_factory, tmp_path):
    site.page("/stats", _echo(listing_v1()))
    d = daemon_factory().start()
    url = site.url(f"/stats?api_key={API_KEY}&token={TOKEN}&page=1")
    bp = dict(LISTING_BP, every="1h", headers={"Authorization": HEADER, "X-Api-Key": "Xk-555"},
              cookies={"sid": COOKIE})
    outputs = []
    r = d.ctl("add", "stats", "--blueprint", write_blueprint(tmp_path / "stats.json", url, bp))
    assert r.returncode == 0, r.stderr
    outputs.append(r.stdout + r.stderr)
    r = d.ctl("run", "stats")
    assert ": ok" in r.stdout
    outputs.append(r.stdout)
    site.page("/stats", _echo(listing_v2()))
    r = d.ctl("run", "stats")
    outputs.append(r.stdout + r.stderr)
    d.wait_for(lambda: any(h["kind"] == "fix" for h in d.ctl_json("history", "stats")), what="a fix attempt")
    for args in (("status",), ("status", "--json"), ("status", "stats"), ("status", "stats", "--json"),
                 ("history", "stats"), ("history", "stats", "--json"), ("diff", "stats"), ("alerts",),
                 ("alerts", "--json")):
        r = d.ctl(*args)
        assert r.returncode == 0, (args, r.stderr)
        outputs.append(r.stdout + r.stderr)
    everything = "\n".join(outputs)
    assert f"api_key={MASK}" in everything and f"token={MASK}" in everything
    log = d.log()
    for secret in PLANTED:
        assert secret not in everything, secret
        assert secret not in log, secret

    # The fix history (diagnosis context, stored candidates), alerts, events and health rows.
    conn = apsw.Connection(str(d.state / "healerd.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        for table in ("fix_history", "alerts", "source_events", "source_health", "task_queue"):
            for row in conn.execute(f"SELECT * FROM {table}"):
                text = json.dumps(row, default=str)
                for secret in PLANTED:
                    assert secret not in text, (table, secret, text[:500])
        patches = [r[0] for r in conn.execute("SELECT patch_generated FROM fix_history WHERE patch_generated "
                                              "IS NOT NULL")]
    finally:
        conn.close()
    assert patches and all(json.loads(p)["cookies"] == {"sid": MASK} for p in patches)
