"""A heal that leaves out a record the page still shows is staged, never promoted, through a real
daemon. The blog's newest post moves into a "featured" block before the renamed list; the healer
(a real local code-healer server, so the candidate is known) answers with the renamed list alone.
Its four records validate and look plausible (four of five), and the fifth post is still on the
page, outside them: the Deployer stages the candidate for a person, and no record without that
post is stored."""

from __future__ import annotations

from tests.support.daemon import FAST_CONFIG
from tests.support.healer_server import HealerServer, healed
from tests.support.sitepages import write_blueprint

POSTS = [("Honing versus sharpening", "Tomas Reyes"), ("Stocking a small pantry", "Mara Quill"),
         ("Rye crackers that keep", "Tomas Reyes"), ("Knife skills for beginners", "Mara Quill"),
         ("A week of one-pot dinners", "Tomas Reyes")]
BP = {"every": "1h", "items": "ol#posts > li", "fields": {"title": {"css": "h2 a"}, "author": {"css": "span.author"}}}
LIST_ONLY = dict(BP, items="ol#posts-list > li")


def post(title: str, author: str) -> str:
    slug = title.lower().replace(" ", "-")
    return (f'<article><h2><a href="/{slug}.html">{title}</a></h2><p>By <span class="author">{author}</span></p>'
            f"<p>Some words about {title}.</p></article>")


def blog(moved: bool = False) -> str:
    if moved:
        body = (f'<aside id="featured">{post(*POSTS[0])}</aside><section><h1>Other articles</h1>'
                '<ol id="posts-list">' + "".join(f"<li>{post(*p)}</li>" for p in POSTS[1:]) + "</ol></section>")
    else:
        body = '<ol id="posts">' + "".join(f"<li>{post(*p)}</li>" for p in POSTS) + "</ol>"
    return f"<html><head><title>Blog</title></head><body><main>{body}</main></body></html>"


def test_a_heal_leaving_out_a_record_still_on_the_page_is_staged(site, daemon_factory, tmp_path):
    healer = HealerServer(lambda req: healed(LIST_ONLY, "the list was renamed"))
    try:
        cfg = FAST_CONFIG.replace("[doctor]\nmax_fix_attempts = 3", '[doctor]\nladder = ["external"]\nmax_fix_attempts = 1')
        assert 'ladder = ["external"]' in cfg
        d = daemon_factory(cfg + f'[healer]\nurl = "{healer.url}"\ntimeouts = [5]\ncycles = 1\n').start()
        site.page("/blog", blog())
        r = d.ctl("add", "blog", "--blueprint", write_blueprint(tmp_path / "blog.json", site.url("/blog"), BP))
        assert r.returncode == 0, r.stderr
        assert d.ctl_json("run", "blog")["ok"] is True
        site.page("/blog", blog(moved=True))
        assert d.ctl_json("run", "blog")["ok"] is False
        d.wait_for(lambda: any(h["kind"] == "fix" for h in d.ctl_json("history", "blog")), timeout=60,
                   what="a fix attempt")
        fixes = [h for h in d.ctl_json("history", "blog") if h["kind"] == "fix"]
        assert fixes[-1]["outcome"] != "promoted", fixes
        assert "leaves out 1 last good record" in fixes[-1]["reason"], fixes
        titles = [[r["title"] for r in rec["data"]] for rec in d.ctl_json("records", "blog")]
        assert all("Honing versus sharpening" in t for t in titles), titles
    finally:
        healer.stop()
