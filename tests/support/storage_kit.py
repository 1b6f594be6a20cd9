"""A disk that fills up: a file written until ENOSPC, a page big enough to need the space, and a
daemon scraping it onto the small file system, with the storage alerts it raises."""

from __future__ import annotations

import errno
import json
from pathlib import Path

from tests.support.daemon import FAST_CONFIG
from tests.support.sitepages import LISTING_BP, write_blueprint


def fill(path: Path) -> None:
    block = b"\0" * 65536
    with open(path, "wb") as fh:
        try:
            while True:
                fh.write(block)
                fh.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def big_page(n: int = 400) -> str:
    rows = "".join(f'<tr class="player"><td class="name">{"player-" * 8}{i}</td><td class="score">{i}</td></tr>'
                   for i in range(n))
    return f'<html><body><table class="stats">{rows}</table></body></html>'


def daemon_on_small_disk(site, daemon_factory, tmp_path: Path, small_fs: Path, retention: int, sources: int = 4):
    """A daemon whose state sits on `small_fs`, `sources` sources scraping `big_page` every second
    and keeping `retention` records each, their first scrapes done. Returns (daemon, logs folder)."""
    logs = tmp_path / "logs"
    site.page("/stats", big_page())
    d = daemon_factory(FAST_CONFIG.replace("[daemon]\n", f"[daemon]\nrecords_retention = {retention}\n"),
                       env={"LOGS_DIRECTORY": str(logs)})
    d.state = small_fs / "state"
    d.start()
    names = [f"s{i}" for i in range(sources)]
    for name in names:
        bp = write_blueprint(tmp_path / f"{name}.json", site.url("/stats"), {**LISTING_BP, "every": "1s"})
        assert d.ctl("add", name, "--blueprint", bp).returncode == 0
    d.wait_for(lambda: all(d.ctl_json("status", n)["last_success_at"] for n in names), what="first scrapes")
    return d, logs


def storage_alerts(logs: Path, event: str) -> list[dict]:
    """The daemon-wide alerts of `event` caused by storage, from alerts.jsonl."""
    p = logs / "alerts.jsonl"
    alerts = [json.loads(line) for line in p.read_text().splitlines()] if p.exists() else []
    return [a for a in alerts if a["event"] == event and a["source"] is None and a["details"].get("cause") == "storage"]
