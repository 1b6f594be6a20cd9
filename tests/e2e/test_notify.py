"""Alerts through Apprise ([[notify]]): the real daemon, an Apprise `json://` receiver on 127.0.0.1
taken down and brought back, a real SMTP server for `mailto://`, and the configuration's refusals."""

from __future__ import annotations

import json

import pytest

from healerd.config import ConfigError, from_dict
from tests.support.daemon import FAST_CONFIG
from tests.support.hookserver import Hook
from tests.support.ports import refusing_socket
from tests.support.sitepages import LISTING_BP, listing_empty, listing_v1, write_blueprint

pytest.importorskip("apprise")

PASSWORD = "nt-Secr3t-pw77"


def _config(*notify: str) -> str:
    return FAST_CONFIG.replace("[doctor]\n", "[doctor]\nenabled = false\n") + "".join(notify)


def _add(d, site, tmp_path, name: str) -> None:
    site.page(f"/{name}", listing_v1())
    bp = write_blueprint(tmp_path / f"{name}.json", site.url(f"/{name}"), {**LISTING_BP, "every": "1h"})
    assert d.ctl("add", name, "--blueprint", bp).returncode == 0


def _flip(d, site, name: str) -> None:
    """Two alerts for `name`: DEGRADED, then RECOVERED."""
    site.page(f"/{name}", listing_empty())
    assert d.ctl_json("run", name)["ok"] is False
    site.page(f"/{name}", listing_v1())
    assert d.ctl_json("run", name)["ok"] is True


def test_an_apprise_json_receiver_down_then_up_gets_each_wanted_alert_once_in_order(site, daemon_factory, tmp_path):
    down = refusing_socket()
    hook = None
    try:
        url = f"json://notifier:{PASSWORD}@127.0.0.1:{down.getsockname()[1]}/notify"
        d = daemon_factory(_config(f'[[notify]]\nurl = "{url}"\nevents = ["DEGRADED", "RECOVERED"]\n'
                                   'sources = ["shop-*"]\n')).start()
        _add(d, site, tmp_path, "shop-a")
        _add(d, site, tmp_path, "other")
        _flip(d, site, "shop-a")
        _flip(d, site, "other")                                  # not for this [[notify]]: never sent
        outage = d.wait_for(lambda: [a for a in d.alerts() if a["event"] == "SYSTEMIC_HALT"],
                            what="the outage's alert")
        assert outage[0]["details"]["cause"].startswith("notify:"), outage
        assert "Apprise could not notify json://***:***@127.0.0.1" in outage[0]["message"], outage
        _flip(d, site, "shop-a")

        hook = Hook(sock=down)                                   # the receiver comes up at the same address
        down = None
        want = ["healerd DEGRADED: shop-a", "healerd RECOVERED: shop-a"] * 2 + ["healerd RECOVERED: the fleet"]
        d.wait_for(lambda: [p["title"] for p in hook.received()] == want, timeout=90,
                   what="each wanted alert delivered once, in order")
        got = hook.received()
        assert [p["type"] for p in got] == ["warning", "success", "warning", "success", "success"]
        shop = [a for a in d.alerts() if a["source"] == "shop-a"]
        assert [p["message"].split("\n")[0] for p in got[:4]] == [a["message"] for a in shop]
        assert "delivers again" in got[4]["message"]
        assert any(h.get("authorization", "").startswith("Basic ") for h in hook.headers)   # the URL's credentials
        # The URL's password is shown nowhere: not in the log, the alerts, nor what the receiver got.
        shown = {"log": d.log(), "alerts.jsonl": (d.state / "alerts.jsonl").read_text(),
                 "alerts": d.ctl("alerts", "--json").stdout, "posts": json.dumps(got)}
        for where, text in shown.items():
            assert PASSWORD not in text, where
        assert len([x for x in d.log().splitlines() if "healerd.alerter: alert notify:" in x]) == 1
        assert d.stop() == 0
    finally:
        if down is not None:
            down.close()
        if hook is not None:
            hook.stop()


def test_mailto_notifications_reach_a_real_smtp_server(site, daemon_factory, tmp_path):
    pytest.importorskip("aiosmtpd")
    from tests.support.smtpsink import SmtpSink

    smtp = SmtpSink()
    try:
        url = f"mailto://127.0.0.1:{smtp.port}?from=healerd@example.com&to=ops@example.com"
        d = daemon_factory(_config(f'[[notify]]\nurl = "{url}"\nevents = ["DEGRADED"]\n')).start()
        _add(d, site, tmp_path, "shop-a")
        _flip(d, site, "shop-a")
        d.wait_for(lambda: smtp.received(), timeout=60, what="the e-mail")
        mail, = smtp.received()
        assert mail["Subject"] == "healerd DEGRADED: shop-a" and "ops@example.com" in mail["To"]
        body = mail.get_payload(decode=True) if not mail.is_multipart() else mail.get_payload(0).get_payload(decode=True)
        degraded = [a for a in d.alerts() if a["event"] == "DEGRADED"][0]
        assert degraded["message"] in body.decode()
    finally:
        smtp.stop()


def test_the_configuration_refuses_what_apprise_cannot_use_without_echoing_the_url():
    def refused(notify) -> str:
        with pytest.raises(ConfigError) as exc:
            from_dict({"notify": notify})
        assert "\n" not in str(exc.value)
        return str(exc.value)

    said = refused([{"url": f"nosuchservice://user:{PASSWORD}@host/x"}])
    assert "[[notify]] #1 url: Apprise does not understand this URL" in said and PASSWORD not in said
    assert "is no event" in refused([{"url": "json://127.0.0.1/x", "events": ["DEGRADD"]}])
    assert "unknown key" in refused([{"url": "json://127.0.0.1/x", "event": ["DEGRADED"]}])
    assert "source-name globs" in refused([{"url": "json://127.0.0.1/x", "sources": []}])
    assert "expected an array of tables" in refused({"url": "json://127.0.0.1/x"})
    cfg = from_dict({"notify": [{"url": f"json://u:{PASSWORD}@127.0.0.1/x", "events": ["QUARANTINED"]}]})
    assert cfg.notify[0].events == ("QUARANTINED",) and cfg.notify[0].sources == ("*",)
    assert PASSWORD not in repr(cfg) and PASSWORD not in str(cfg.notify[0].url)


def test_the_webhook_and_notify_tables_each_keep_their_own_cursor(site, daemon_factory, tmp_path):
    from tests.support.daemon import db_rows

    hook, notified = Hook(), Hook()
    try:
        cfg = _config(f'[[notify]]\nurl = "json://127.0.0.1:{notified.port}/n"\n').replace(
            "[alerts]\n", f'[alerts]\nwebhook = "{hook.url()}"\n')
        d = daemon_factory(cfg).start()
        _add(d, site, tmp_path, "shop-a")
        _flip(d, site, "shop-a")
        d.wait_for(lambda: len(hook.received()) == 2 and len(notified.received()) == 2, what="both targets")
        assert [p["title"] for p in notified.received()] == ["healerd DEGRADED: shop-a", "healerd RECOVERED: shop-a"]
        assert [a["event"] for a in hook.received()] == ["DEGRADED", "RECOVERED"]
        # Each target writes its cursor after its own delivery: wait until both have.
        cursors = d.wait_for(lambda: (lambda got: got if len(got) == 2 else None)(
            [r for r in db_rows(d, "SELECT target, cursor FROM alert_cursors ORDER BY target") if r["cursor"] >= 2]),
            what="both cursors")
        assert len(cursors) == 2 and cursors[1]["target"] == "webhook" and cursors[0]["target"].startswith("notify:")
        assert d.stop() == 0
        # Without the webhook its cursor goes (one configured again later starts afresh); the other stays.
        d2 = daemon_factory(_config(f'[[notify]]\nurl = "json://127.0.0.1:{notified.port}/n"\n')).start()
        _flip(d2, site, "shop-a")
        d2.wait_for(lambda: len(notified.received()) == 4, what="the notifications after the restart")
        assert [r["target"] for r in db_rows(d2, "SELECT target FROM alert_cursors")] == [cursors[0]["target"]]
        assert len(hook.received()) == 2
    finally:
        hook.stop()
        notified.stop()
