"""The alert webhook, at least once: the real daemon, a real receiver on 127.0.0.1 taken down and
brought back at the same address, a daemon restart in between."""

from __future__ import annotations

import signal

from tests.support.daemon import FAST_CONFIG
from tests.support.hookserver import Hook
from tests.support.ports import refusing_socket
from tests.support.sitepages import LISTING_BP, listing_empty, listing_v1, write_blueprint


def _config(url: str = "") -> str:
    return (FAST_CONFIG.replace("[alerts]\n", f'[alerts]\nwebhook = "{url}"\n')
            .replace("[doctor]\n", "[doctor]\nenabled = false\n"))


def _flip(d, site) -> None:
    """Two alerts for `flip`: DEGRADED, then RECOVERED."""
    site.page("/flip", listing_empty())
    assert d.ctl_json("run", "flip")["ok"] is False
    site.page("/flip", listing_v1())
    assert d.ctl_json("run", "flip")["ok"] is True


def _outage_lines(d) -> list[str]:
    return [x for x in d.log().splitlines() if "healerd.alerter: alert webhook:" in x]


def test_alerts_raised_while_the_webhook_is_down_arrive_once_it_is_up_once_each_in_order_across_a_restart(
        site, daemon_factory, tmp_path):
    down = refusing_socket()          # the receiver's address, held: connections are refused
    hook = None
    try:
        cfg = _config(f"http://127.0.0.1:{down.getsockname()[1]}/hook")
        site.page("/flip", listing_v1())
        d = daemon_factory(cfg).start()
        bp = write_blueprint(tmp_path / "flip.json", site.url("/flip"), {**LISTING_BP, "every": "1h"})
        assert d.ctl("add", "flip", "--blueprint", bp).returncode == 0
        _flip(d, site)
        d.wait_for(lambda: [a for a in d.alerts() if a["event"] == "SYSTEMIC_HALT"], what="the outage's alert")
        _flip(d, site)
        d.wait_for(lambda: len([a for a in d.alerts() if a["source"] == "flip"]) == 4, what="four alerts")
        d.wait_for(lambda: len(d.ctl_json("alerts")) == len(d.alerts()), what="the alerts table")
        assert d.stop() == 0

        d2 = daemon_factory(cfg).start()   # the same state dir; the receiver still down
        _flip(d2, site)
        d2.wait_for(lambda: len([a for a in d2.alerts() if a["source"] == "flip"]) == 6, what="six alerts")

        hook = Hook(sock=down)             # the receiver comes up at the same address
        down = None

        def settled() -> bool:
            got = hook.received()
            return len(got) == len(d2.alerts()) and any(a["event"] == "RECOVERED" and a["source"] is None
                                                        for a in got)
        d2.wait_for(settled, timeout=90, what="every alert delivered")
        alerts = d2.alerts()
        # Each alert exactly once, in the order raised (before and after the restart), as the log has it.
        assert hook.received() == alerts
        assert [a["event"] for a in alerts if a["source"] == "flip"] == ["DEGRADED", "RECOVERED"] * 3
        ids = [int(h["x-healerd-alert-id"]) for h in hook.headers]
        assert ids == sorted(set(ids))
        # The outage was one SYSTEMIC_HALT alert and one log line across both runs, not one per alert.
        outage = [a for a in alerts if a["event"] == "SYSTEMIC_HALT"]
        assert len(outage) == 1 and outage[0]["details"] == {"cause": "webhook"}, outage
        assert len(_outage_lines(d2)) == 1
        assert d2.stop(signal.SIGTERM) == 0
    finally:
        if down is not None:
            down.close()
        if hook is not None:
            hook.stop()


def test_a_new_webhook_starts_with_the_alerts_raised_from_then_on(site, daemon_factory, tmp_path):
    """A webhook configured on a daemon that already raised alerts gets the new ones, not the history."""
    site.page("/flip", listing_v1())
    d = daemon_factory(_config()).start()
    bp = write_blueprint(tmp_path / "flip.json", site.url("/flip"), {**LISTING_BP, "every": "1h"})
    assert d.ctl("add", "flip", "--blueprint", bp).returncode == 0
    _flip(d, site)
    d.wait_for(lambda: len(d.ctl_json("alerts")) == 2, what="the alerts table")
    assert d.stop() == 0
    hook = Hook()
    try:
        d2 = daemon_factory(_config(hook.url())).start()
        _flip(d2, site)
        d2.wait_for(lambda: len(hook.received()) == 2, what="the new alerts delivered")
        assert len(d2.alerts()) == 4 and hook.received() == d2.alerts()[2:]
    finally:
        hook.stop()
