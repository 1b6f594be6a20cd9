"""Prometheus /metrics through the real daemon: served on a TCP address and on a Unix socket,
parsed with prometheus-client's own text parser, counters moving with scrapes, heals, alerts."""

from __future__ import annotations

import http.client
import re
import socket

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.daemon import FAST_CONFIG
from tests.support.sitepages import LISTING_BP, listing_v1, listing_v2, write_blueprint

HOURLY = {**LISTING_BP, "every": "1h"}


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str):
        super().__init__("localhost", timeout=10)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(self.path)


def scrape(conn: http.client.HTTPConnection, path: str = "/metrics") -> tuple[int, str, str]:
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.getheader("Content-Type") or "", r.read().decode()
    finally:
        conn.close()


def samples(text: str) -> dict[tuple[str, tuple], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(got: dict, name: str, **labels) -> float:
    return got.get((name, tuple(sorted(labels.items()))), 0.0)


def tcp_address(d) -> tuple[str, int]:
    m = d.wait_for(lambda: re.search(r"Prometheus metrics on ([\d.]+):(\d+)/metrics", d.log()), what="the metrics line")
    return m.group(1), int(m.group(2))


def test_metrics_over_tcp_move_with_scrapes_heals_and_alerts(site, daemon_factory, tmp_path):
    site.page("/stats", listing_v1())
    d = daemon_factory(FAST_CONFIG + '\n[metrics]\nlisten = "127.0.0.1:0"\n').start()
    host, port = tcp_address(d)

    status, ctype, text = scrape(http.client.HTTPConnection(host, port, timeout=10))
    assert status == 200 and ctype.startswith("text/plain")
    before = samples(text)
    assert value(before, "healerd_scrapes_total", outcome="ok") == 0
    assert value(before, "healerd_sources", state="ACTIVE") == 0

    r = d.ctl("add", "stats", "--blueprint", write_blueprint(tmp_path / "stats.json", site.url("/stats"), HOURLY))
    assert r.returncode == 0, r.stderr
    assert d.ctl("run", "stats").returncode == 0
    got = samples(scrape(http.client.HTTPConnection(host, port, timeout=10))[2])
    assert value(got, "healerd_scrapes_total", outcome="ok") == 2
    assert value(got, "healerd_scrape_duration_seconds_count") == 2
    assert value(got, "healerd_sources", state="ACTIVE") == 1

    site.page("/stats", listing_v2())                     # a redesign: a failed scrape, then a heal
    d.ctl("run", "stats")
    d.wait_for(lambda: d.ctl_json("status", "stats")["state"] == "ACTIVE" and d.ctl_json("status", "stats")["version"] > 1,
               what="the heal")
    got = d.wait_for(lambda: (lambda g: g if value(g, "healerd_recovery_seconds_count") == 1 else None)(
        samples(scrape(http.client.HTTPConnection(host, port, timeout=10))[2])), what="the recovery in the metrics")
    assert value(got, "healerd_scrapes_total", outcome="PARSE_ERROR") >= 1
    assert value(got, "healerd_fix_attempts_total", rung="builtin", outcome="promoted") == 1
    assert value(got, "healerd_fixes_promoted_total") == 1
    assert value(got, "healerd_alerts_total", event="DEGRADED") == 1
    assert value(got, "healerd_alerts_total", event="HEALED") == 1
    # No label carries a source name: every label value is one of the bounded sets.
    assert not any("stats" in str(labels) for _, labels in got)
    assert scrape(http.client.HTTPConnection(host, port, timeout=10), "/other")[0] == 404


def test_metrics_on_a_unix_socket_and_feed_backlog(site, daemon_factory, tmp_path):
    sock = tmp_path / "metrics.sock"
    out = tmp_path / "feeds"
    cfg = FAST_CONFIG + f'\n[metrics]\nlisten = "{sock}"\n[[feeds]]\nname = "lake"\nkind = "jsonl"\npath = "{out}/{{source}}.jsonl"\n'
    site.page("/stats", listing_v1())
    d = daemon_factory(cfg).start()
    r = d.ctl("add", "stats", "--blueprint", write_blueprint(tmp_path / "stats.json", site.url("/stats"), HOURLY))
    assert r.returncode == 0, r.stderr
    assert oct(sock.stat().st_mode & 0o777) == "0o600"
    got = samples(scrape(_UnixConnection(str(sock)))[2])
    assert value(got, "healerd_scrapes_total", outcome="ok") == 1
    assert ("healerd_feed_backlog", (("feed", "lake"),)) in got
    assert value(got, "healerd_sources", state="ACTIVE") == 1


@pytest.mark.parametrize("listen", ["nowhere", "127.0.0.1:99999"])
def test_a_bad_listen_is_refused_at_start(daemon_factory, listen):
    d = daemon_factory(FAST_CONFIG + f'\n[metrics]\nlisten = "{listen}"\n')
    with pytest.raises(RuntimeError, match=r"\[metrics\] listen"):
        d.start(wait=10)
