"""Small realistic pages for end-to-end tests: a listing before and after a redesign."""

ROWS = [("Ada", 31), ("Grace", 27), ("Linus", 24), ("Margaret", 22), ("Ken", 19)]

LISTING_BP = {
    "every": "1s",
    "items": "table.stats tr.player",
    "fields": {"name": {"css": "td.name"}, "score": {"css": "td.score", "type": "int"}},
}


def listing_v1(rows=ROWS) -> str:
    body = "".join(f'<tr class="player"><td class="name">{n}</td><td class="score">{s}</td></tr>' for n, s in rows)
    return (f'<html><head><title>Stats</title><script>var x = 1;</script></head><body><nav><a href="/">home</a></nav>'
            f'<table class="stats"><tr><th>Name</th><th>Score</th></tr>{body}</table></body></html>')


def listing_v2(rows=ROWS) -> str:
    """A redesign: classes renamed, the table wrapped."""
    body = "".join(f'<tr class="row-player"><td class="player-name">{n}</td><td class="pts">{s}</td></tr>'
                   for n, s in rows)
    return (f'<html><head><title>Stats</title></head><body><nav><a href="/">home</a></nav><div class="wrap">'
            f'<table class="league-table"><tr><th>Name</th><th>Score</th></tr>{body}</table></div></body></html>')


def listing_no_score(rows=ROWS) -> str:
    """The score column is gone: nothing to heal, only to refuse."""
    body = "".join(f'<tr class="player"><td class="name">{n}</td></tr>' for n, _ in rows)
    return (f'<html><head><title>Stats</title></head><body>'
            f'<table class="stats"><tr><th>Name</th></tr>{body}</table></body></html>')


def listing_empty() -> str:
    return '<html><body><table class="stats"><tr><th>Name</th><th>Score</th></tr></table></body></html>'


CHALLENGE = ('<html><head><title>Just a moment...</title></head><body><div id="cf-challenge-running">'
             'Checking your browser before accessing the site.</div><noscript>Enable JavaScript and cookies to '
             'continue</noscript><script src="/cdn-cgi/challenge-platform/h/b/orchestrate/jsch/v1"></script>'
             '</body></html>')


def write_blueprint(path, url: str, bp: dict = LISTING_BP) -> str:
    import json

    data = dict(bp)
    data["url"] = url
    path.write_text(json.dumps(data))
    return str(path)
