"""The fix memory on a real SQLite file: submit, merge, search, confirm, usage, forget, bundles."""

from __future__ import annotations

import json

import pytest

from healerd.core.blueprint import from_dict
from healerd.store.fix_bundles import apply_bundle, make_parser_bundle, make_selector_bundle
from healerd.store.memory import FixMemory, FixMemoryError, MemoryMatch, confidence, issue_fingerprint
from healerd.store.sql import rows, scalar
from tests.support.clock import Clock

HOST = "shop.example"
OLD = {"url": "https://shop.example/c/1", "items": "ul.products li.product",
       "fields": {"name": {"css": "h2.title"}, "price": {"css": "span.price", "type": "float"},
                  "link": {"css": "a.more", "attr": "href"}}}
NEW = {"url": "https://shop.example/c/1", "items": "div.grid article.card",
       "fields": {"name": {"css": "h3.card-title"}, "price": {"css": "p.cost", "type": "float"},
                  "link": {"css": "a.card-link", "attr": "href"}}}
BROKEN = ["h2.title", "span.price"]


@pytest.fixture
def db(conn):
    """The store's real SQLite file (tests/store/conftest.py's `conn`)."""
    return conn


@pytest.fixture
def clock():
    return Clock(1_790_000_000.0)


@pytest.fixture
def mem(db, clock):
    return FixMemory(db, clock=clock)


def bundle():
    return make_selector_bundle(from_dict(OLD), from_dict(NEW))


def submit(mem, source="shop-1", **over):
    args = dict(error_type="PARSE_ERROR", host=HOST, diff_sig="d1", template_sig="t1", broken_selectors=BROKEN,
                fix_bundle=bundle(), source_name=source, title="shop.example: product cards redesigned",
                root_cause="the site's markup changed")
    args.update(over)
    return mem.submit(**args)


def search(mem, source="shop-2", **over):
    args = dict(error_type="PARSE_ERROR", host=HOST, broken_selectors=BROKEN, diff_sig="d1", template_sig="t1",
                source_name=source)
    args.update(over)
    return mem.search(**args)


def usage(db, event=None):
    sql = "SELECT event_type, issue_id, source_name, success FROM memory_usage"
    return rows(db, sql + (" WHERE event_type = ?" if event else "") + " ORDER BY id", (event,) if event else ())


# -- bundles --------------------------------------------------------------------------------

def test_make_selector_bundle_lists_what_changed():
    b = bundle()
    assert b["kind"] == "selectors"
    assert b["items"] == {"from": "ul.products li.product", "to": "div.grid article.card"}
    assert b["fields"] == {
        "name": {"from": "h2.title", "to": "h3.card-title", "attr_from": None, "attr_to": None},
        "price": {"from": "span.price", "to": "p.cost", "attr_from": None, "attr_to": None},
        "link": {"from": "a.more", "to": "a.card-link", "attr_from": "href", "attr_to": "href"},
    }
    assert b["verification"][0]["check"] == "validated on live page"
    same = make_selector_bundle(from_dict(OLD), from_dict(OLD))
    assert same["fields"] == {} and same["items"] is None


def test_apply_bundle_to_a_sibling_with_the_same_selectors():
    sibling = from_dict({**OLD, "url": "https://shop.example/c/2", "headers": {"Cookie": "a=b"}})
    out = apply_bundle(sibling, bundle())
    assert out is not None
    assert out.items == "div.grid article.card"
    assert out.selectors() == {"name": "h3.card-title", "price": "p.cost", "link": "a.card-link"}
    assert out.fields["link"].attr == "href" and out.fields["price"].type == "float"
    assert out.url == "https://shop.example/c/2" and out.headers == {"Cookie": "a=b"}


def test_apply_bundle_matches_by_selector_when_field_names_differ():
    other = from_dict({"url": "https://shop.example/c/3", "items": "ul.products li.product",
                       "fields": {"title": {"css": "h2.title"}, "amount": {"css": "span.price", "type": "float"},
                                  "stock": {"css": "em.stock"}}})
    out = apply_bundle(other, bundle())
    assert out is not None
    assert out.selectors() == {"title": "h3.card-title", "amount": "p.cost", "stock": "em.stock"}
    assert out.items == "div.grid article.card"


def test_apply_bundle_to_an_unrelated_blueprint_is_none():
    unrelated = from_dict({"url": "https://news.example/", "items": "div.story",
                           "fields": {"headline": {"css": "h1.hl"}}})
    assert apply_bundle(unrelated, bundle()) is None
    assert apply_bundle(from_dict(NEW), bundle()) is None  # already healed: nothing changes
    assert apply_bundle(from_dict(OLD), {"kind": "code"}) is None
    assert apply_bundle(from_dict(OLD), {"fields": {"name": {"from": "h2.title", "to": "h3[["}}}) is None
    assert apply_bundle(from_dict(OLD), "garbage") is None


def test_apply_bundle_changes_attr_only_when_it_had_the_old_one():
    b = {"kind": "selectors", "items": None,
         "fields": {"link": {"from": "a.more", "to": "a.more", "attr_from": "href", "attr_to": "data-href"}}}
    out = apply_bundle(from_dict(OLD), b)
    assert out is not None and out.fields["link"].attr == "data-href"
    no_attr = from_dict({"url": "https://shop.example/", "fields": {"link": {"css": "a.more"}}})
    assert apply_bundle(no_attr, b) is None


# -- parser bundles -------------------------------------------------------------------------

CODE_V1 = """from selectolax.lexbor import LexborHTMLParser

def parse(html):
    rows = LexborHTMLParser(html).css('table.stats tr.player')
    return [{'name': r.css_first('td.name').text(), 'score': r.css_first('td.score').text()} for r in rows]
"""
CODE_V2 = CODE_V1.replace("table.stats tr.player", "table.league tr.row").replace("td.name", "td.who") \
    .replace("td.score", "td.pts")
CODE_BP = {"url": "https://stats.example/t/1", "every": "5m",
           "fields": {"name": {}, "score": {"type": "int"}}, "parser": CODE_V1}


def parser_bundle(code: str = CODE_V2) -> dict:
    return make_parser_bundle(from_dict(CODE_BP), from_dict(CODE_BP).with_parser(code))


def test_a_parser_bundle_is_made_sanitized_and_applied_to_another_source_keeping_its_own_settings(mem):
    b = parser_bundle()
    assert b["kind"] == "parser" and b["parser"] == CODE_V2
    assert b["fields"] == ["name", "score"] and b["items"] is None
    assert make_parser_bundle(from_dict(CODE_BP), from_dict(CODE_BP)) is None   # the same parser: nothing new
    assert make_parser_bundle(from_dict(OLD), from_dict(NEW)) is None           # selectors only

    out = submit(mem, "stats-1", host="stats.example", broken_selectors=[], fix_bundle=b,
                 title="stats.example: parser replaced; ask ops@stats.example",
                 extra_secrets=["s3cr3t-cookie-value"])
    assert out["status"] == "created"
    shown = mem.show(out["issue_id"])
    assert shown["fix_bundle"]["parser"] == CODE_V2   # the code is stored as promoted, not masked
    assert shown["fix_bundle"]["fields"] == ["name", "score"]
    assert "ops@" not in json.dumps(shown)            # while the texts around it are masked

    [match] = search(mem, "stats-2", host="stats.example", broken_selectors=[])
    assert match.fix_bundle == shown["fix_bundle"]
    sibling = from_dict({**CODE_BP, "url": "https://stats.example/t/2", "every": "1h",
                         "headers": {"Authorization": "Bearer abc123def456ghi"}, "cookies": {"sid": "xyz987"}})
    cand = apply_bundle(sibling, match.fix_bundle)
    assert cand is not None and cand.parser == CODE_V2
    assert cand.url == "https://stats.example/t/2" and cand.every == 3600
    assert cand.headers == {"Authorization": "Bearer abc123def456ghi"} and cand.cookies == {"sid": "xyz987"}
    assert cand.fields == sibling.fields
    # A selector source whose fields have the same names takes the parser too.
    same_names = from_dict({"url": "https://stats.example/t/3", "items": "table.stats tr.player",
                            "fields": {"name": {"css": "td.name"}, "score": {"css": "td.score", "type": "int"}}})
    cand = apply_bundle(same_names, match.fix_bundle)
    assert cand is not None and cand.parser == CODE_V2 and cand.url == "https://stats.example/t/3"
    # Already running that parser: nothing changes.
    assert apply_bundle(from_dict(CODE_BP).with_parser(CODE_V2), b) is None


def test_a_parser_bundle_with_a_secret_literal_is_refused(mem, db):
    leaky = parser_bundle(CODE_V2.replace("def parse(html):",
                                          "API_KEY = 'AKIAIOSFODNN7EXAMPLE'\n\ndef parse(html):"))
    out = submit(mem, fix_bundle=leaky, broken_selectors=[])
    assert out["status"] == "rejected" and out["reason"] == "sanitization_failed"
    assert "aws_access_key" in out["details"]
    # A source's own cookie value written into the code is a secret too.
    cookie = parser_bundle(CODE_V2.replace("td.who", "td[data-s='Zq7wPlk2']"))
    out = submit(mem, fix_bundle=cookie, broken_selectors=[], extra_secrets=["Zq7wPlk2"])
    assert out["status"] == "rejected" and out["reason"] == "sanitization_failed"
    assert scalar(db, "SELECT count(*) FROM memory_issues") == 0
    with pytest.raises(FixMemoryError) as err:
        submit(mem, fix_bundle={"kind": "parser", "parser": 42, "fields": ["name"]})
    assert err.value.code == "validation_error"


def test_a_parser_bundle_is_not_applied_to_a_selector_source_with_different_fields():
    b = parser_bundle()
    assert apply_bundle(from_dict(OLD), b) is None   # name/price/link is not what the parser fills
    fewer = from_dict({"url": "https://stats.example/t/4", "fields": {"name": {"css": "td.name"}}})
    assert apply_bundle(fewer, b) is None
    same = from_dict({"url": "https://stats.example/t/4", "fields": {"name": {"css": "td.name"},
                                                                     "score": {"css": "td.score"}}})
    assert apply_bundle(same, b).parser == CODE_V2   # while the same names take it
    other_code = from_dict(dict(CODE_BP, fields={"title": {}, "score": {"type": "int"}}))
    assert apply_bundle(other_code, b) is None        # a code parser filling other fields does not
    # A parser the sandbox would refuse is never a candidate.
    evil = {**b, "parser": "import os\n\ndef parse(html):\n    return [{'name': os.getcwd(), 'score': '1'}]\n"}
    assert apply_bundle(from_dict(CODE_BP), evil) is None
    assert apply_bundle(from_dict(CODE_BP), {**b, "parser": None}) is None


# -- submit and merge -----------------------------------------------------------------------

def test_submit_creates_then_merges_the_same_fix(mem, db, clock):
    first = submit(mem, "shop-1")
    assert first["status"] == "created" and first["merged"] is False
    issue_id = first["issue_id"]
    assert len(issue_id) == 36
    clock.advance(60)
    second = submit(mem, "shop-2")
    assert second == {"status": "created", "issue_id": issue_id, "merged": True, "message": second["message"],
                      "confidence_score": confidence(2, 0), "verification_count": 2}
    [issue] = mem.list_issues()
    assert issue["verification_count"] == 2
    assert issue["confidence_score"] > 0.6
    assert issue["affected_sources"] == ["shop-1", "shop-2"]
    assert scalar(db, "SELECT fingerprint FROM memory_issues") == issue_fingerprint("PARSE_ERROR", HOST, "d1", BROKEN)
    assert [u["event_type"] for u in usage(db)] == ["issue_submitted", "issue_submitted"]


def test_new_issue_starts_at_0_6(mem):
    issue_id = submit(mem)["issue_id"]
    shown = mem.show(issue_id)
    assert shown["confidence_score"] == 0.6 and shown["verification_count"] == 1 and shown["status"] == "active"


def test_same_change_with_a_different_fix_is_its_own_issue(mem):
    a = submit(mem, "shop-1")
    other = dict(bundle())
    other["fields"] = {"name": {"from": "h2.title", "to": "h3.alt", "attr_from": None, "attr_to": None}}
    b = submit(mem, "shop-2", fix_bundle=other)
    assert b["merged"] is False and b["issue_id"] != a["issue_id"]
    assert len(mem.list_issues()) == 2
    # a third source confirming the second fix merges into it, not into the first
    c = submit(mem, "shop-3", fix_bundle=other)
    assert c["merged"] is True and c["issue_id"] == b["issue_id"]


def test_submit_sanitizes_texts_and_refuses_a_bundle_that_carries_a_secret(mem, db):
    leaky = bundle()
    leaky["fields"]["link"]["to"] = 'a[href*="token=AKIAIOSFODNN7EXAMPLE"]'
    out = submit(mem, fix_bundle=leaky)
    assert out["status"] == "rejected" and out["reason"] == "sanitization_failed"
    assert "aws_access_key" in out["details"]
    assert scalar(db, "SELECT count(*) FROM memory_issues") == 0
    assert usage(db) == []

    ok = submit(mem, title="shop https://admin:hunter2@shop.example broke",
                root_cause="Authorization: Bearer abc123def456ghi failed; mail ops@shop.example",
                environment={"api_key": "k-123", "os": "linux"},
                fix_bundle={**bundle(), "verification": [{"check": "validated on live page",
                                                          "note": "with cookie Cookie: sid=abc123"}]})
    assert ok["status"] == "created"
    shown = mem.show(ok["issue_id"])
    text = json.dumps(shown)
    for secret in ("hunter2", "abc123def456ghi", "ops@", "k-123", "sid=abc123"):
        assert secret not in text
    assert shown["canonical_title"] == "shop https://***:***@shop.example broke"
    assert shown["environment"] == {"api_key": "***", "os": "linux"}
    assert shown["fix_bundle"]["fields"] == bundle()["fields"]  # the selectors themselves are untouched


def test_submit_rejects_bad_input_with_the_uniform_error_shape(mem):
    with pytest.raises(FixMemoryError) as err:
        submit(mem, fix_bundle={})
    assert err.value.to_dict() == {"error": {"code": "validation_error",
                                             "message": "fix_bundle: expected a non-empty object",
                                             "details": {"key": "fix_bundle"}}}
    with pytest.raises(FixMemoryError) as err:
        submit(mem, broken_selectors="h2.title")
    assert err.value.code == "validation_error"
    with pytest.raises(FixMemoryError):
        submit(mem, source_name="")


# -- search ---------------------------------------------------------------------------------

def test_search_ranks_by_relevance_then_confidence(mem, db, clock):
    exact = submit(mem, "shop-1")["issue_id"]
    # the same host, half the selectors, another change
    partial_fix = {"kind": "selectors", "items": None,
                   "fields": {"name": {"from": "h2.title", "to": "h4.t", "attr_from": None, "attr_to": None}}}
    partial = submit(mem, "shop-1", diff_sig="d2", broken_selectors=["h2.title", "em.x"], fix_bundle=partial_fix,
                     title="other change")["issue_id"]
    # another host: not offered even though the selectors are the same
    submit(mem, "news-1", host="news.example", template_sig="t9", title="news")
    # the same host, nothing in common
    submit(mem, "shop-1", diff_sig="d3", broken_selectors=["div.nothing"], title="unrelated",
           fix_bundle={"kind": "selectors", "items": None,
                       "fields": {"x": {"from": "div.nothing", "to": "div.y", "attr_from": None, "attr_to": None}}})
    found = search(mem)
    assert [m.issue_id for m in found] == [exact, partial]
    assert isinstance(found[0], MemoryMatch)
    assert found[0].relevance_score > found[1].relevance_score
    assert found[0].fix_bundle == bundle() and found[0].confidence_score == 0.6
    # the same template on another host is found too, below the same-host match
    cross = search(mem, host="mirror.example", template_sig="t1")
    assert [m.issue_id for m in cross] == [exact, partial]
    assert cross[0].relevance_score < found[0].relevance_score
    assert search(mem, limit=1)[0].issue_id == exact
    assert search(mem, broken_selectors=["p.none"], diff_sig="zz") == []


def test_equal_relevance_orders_by_confidence(mem):
    a = submit(mem, "shop-1")["issue_id"]
    other = {"kind": "selectors", "items": None,
             "fields": {"name": {"from": "h2.title", "to": "h3.alt", "attr_from": None, "attr_to": None},
                        "price": {"from": "span.price", "to": "p.alt", "attr_from": None, "attr_to": None}}}
    b = submit(mem, "shop-2", fix_bundle=other)["issue_id"]
    mem.confirm(b, "shop-3", True)
    assert [m.issue_id for m in search(mem, source="shop-9")] == [b, a]
    mem.confirm(a, "shop-4", True)
    mem.confirm(a, "shop-5", True)
    assert [m.issue_id for m in search(mem, source="shop-9")] == [a, b]


def test_search_records_usage(mem, db):
    issue_id = submit(mem)["issue_id"]
    search(mem, source="shop-2")
    search(mem, source="shop-3", broken_selectors=["p.none"], diff_sig="zz")
    events = usage(db, "search")
    assert events == [
        {"event_type": "search", "issue_id": None, "source_name": "shop-2", "success": None},
        {"event_type": "search", "issue_id": issue_id, "source_name": "shop-2", "success": None},
        {"event_type": "search", "issue_id": None, "source_name": "shop-3", "success": None},
    ]


def test_search_rejects_bad_input(mem):
    with pytest.raises(FixMemoryError) as err:
        search(mem, limit=0)
    assert err.value.code == "validation_error"
    with pytest.raises(FixMemoryError):
        search(mem, broken_selectors=[1, 2])


# -- confirm --------------------------------------------------------------------------------

def test_a_bundle_failing_on_one_source_loses_confidence_and_is_not_offered_there_again(mem, db, clock):
    issue_id = submit(mem, "shop-1")["issue_id"]
    assert [m.issue_id for m in search(mem, source="shop-2")] == [issue_id]
    clock.advance(10)
    out = mem.confirm(issue_id, "shop-2", False, notes="validation failed: price null on 25 of 25 items")
    assert out == {"status": "confirmed", "issue_id": issue_id, "updated_confidence": confidence(1, 1),
                   "updated_verification_count": 1}
    assert out["updated_confidence"] < 0.6
    shown = mem.show(issue_id)
    assert shown["failure_count"] == 1 and shown["affected_sources"] == ["shop-1"]
    assert shown["confirmations"][0] == {"source_name": "shop-2", "success": False,
                                         "notes": "validation failed: price null on 25 of 25 items",
                                         "at": "2026-09-21T14:13:30Z"}
    assert search(mem, source="shop-2") == []
    assert [m.issue_id for m in search(mem, source="shop-3")] == [issue_id]


def test_success_raises_confidence_and_adds_the_source(mem, clock):
    issue_id = submit(mem, "shop-1")["issue_id"]
    before = mem.show(issue_id)
    clock.advance(3600)
    out = mem.confirm(issue_id, "shop-2", True)
    assert out["updated_confidence"] > before["confidence_score"]
    assert out["updated_verification_count"] == 2
    after = mem.show(issue_id)
    assert after["affected_sources"] == ["shop-1", "shop-2"]
    assert after["last_confirmed_at"] == "2026-09-21T15:13:20Z"
    # failures first, then successes: confidence follows the outcomes both ways
    low = mem.confirm(issue_id, "shop-3", False)["updated_confidence"]
    high = mem.confirm(issue_id, "shop-4", True)["updated_confidence"]
    assert low == confidence(2, 1) < out["updated_confidence"]
    assert high == confidence(3, 1) > low


def test_repeated_failures_retire_an_issue(mem):
    issue_id = submit(mem, "shop-1")["issue_id"]
    for i in range(8):
        mem.confirm(issue_id, f"other-{i}", False)
    shown = mem.show(issue_id)
    assert shown["status"] == "invalid" and shown["confidence_score"] < 0.25
    assert search(mem, source="fresh") == []


def test_confirm_unknown_issue_is_not_found(mem):
    with pytest.raises(FixMemoryError) as err:
        mem.confirm("nope", "shop-1", True)
    assert err.value.code == "not_found"
    assert err.value.to_dict()["error"]["details"] == {"issue_id": "nope"}
    with pytest.raises(FixMemoryError) as err:
        mem.confirm(submit(mem)["issue_id"], "shop-1", "yes")
    assert err.value.code == "validation_error"


# -- usage and stats ------------------------------------------------------------------------

def test_usage_stats_per_issue_and_global(mem, db, clock):
    issue_id = submit(mem, "shop-1")["issue_id"]
    for src, ok in (("shop-2", True), ("shop-3", False), ("shop-4", True)):
        clock.advance(60)
        search(mem, source=src)
        got = mem.get_fix_bundle(issue_id, source_name=src)
        assert got["fix_bundle"] == bundle() and got["root_cause"] == "the site's markup changed"
        mem.record_usage("fix_applied", issue_id, src)
        mem.confirm(issue_id, src, ok)
    stats = mem.issue_stats(issue_id)
    assert stats == {
        "issue_id": issue_id,
        "total_queries": 3,
        "total_fix_retrieved": 3,
        "total_fix_applied": 3,
        "total_resolved": 2,
        "resolution_rate": round(2 / 3, 4),
        "last_queried_at": "2026-09-21T14:16:20Z",
        "last_resolved_at": "2026-09-21T14:16:20Z",
    }
    g = mem.global_stats()
    assert g["total_queries"] == 3 and g["queries_24h"] == 3
    assert g["total_issues_resolved"] == 2 and g["resolutions_24h"] == 2
    assert g["total_issues_submitted"] == 1
    assert g["top_queried_issues"] == [issue_id] and g["top_resolved_issues"] == [issue_id]
    assert g["active_sources_24h"] == 4
    clock.advance(2 * 86400)
    g = mem.global_stats()
    assert g["queries_24h"] == 0 and g["resolutions_24h"] == 0 and g["total_queries"] == 3


def test_record_usage_validates_the_event_type(mem, db):
    with pytest.raises(FixMemoryError) as err:
        mem.record_usage("clicked", None, "shop-1")
    assert err.value.code == "validation_error"
    mem.record_usage("search", None, None)
    assert usage(db) == [{"event_type": "search", "issue_id": None, "source_name": None, "success": None}]


def test_get_fix_bundle_unknown_is_not_found(mem):
    with pytest.raises(FixMemoryError) as err:
        mem.get_fix_bundle("00000000-0000-4000-8000-000000000000")
    assert err.value.code == "not_found"


# -- list, show, forget ---------------------------------------------------------------------

def test_list_and_show_shapes(mem, clock):
    issue_id = submit(mem, "shop-1")["issue_id"]
    mem.confirm(issue_id, "shop-2", True)
    [item] = mem.list_issues()
    assert item == {
        "issue_id": issue_id,
        "canonical_title": "shop.example: product cards redesigned",
        "error_type": "PARSE_ERROR",
        "host": HOST,
        "confidence_score": confidence(2, 0),
        "verification_count": 2,
        "failure_count": 0,
        "affected_sources": ["shop-1", "shop-2"],
        "last_confirmed_at": "2026-09-21T14:13:20Z",
        "status": "active",
    }
    shown = mem.show(issue_id)
    assert {k: shown[k] for k in item} == item
    assert shown["fix_bundle"] == bundle()
    assert shown["root_cause_category"] == "the site's markup changed"
    assert shown["broken_selectors"] == sorted(BROKEN)
    assert shown["diff_sig"] == "d1" and shown["template_sig"] == "t1"
    assert shown["usage"]["total_resolved"] == 1
    assert shown["created_at"] == "2026-09-21T14:13:20Z"
    json.dumps(shown)  # serialisable as is
    assert FixMemory(mem.conn).list_issues() == [item]


def test_forget_removes_the_issue_and_its_history(mem, db):
    keep = submit(mem, "shop-1")["issue_id"]
    gone = submit(mem, "shop-1", diff_sig="d2", title="other")["issue_id"]
    mem.confirm(gone, "shop-2", False)
    search(mem, source="shop-3")
    mem.forget(gone)
    assert [i["issue_id"] for i in mem.list_issues()] == [keep]
    assert scalar(db, "SELECT count(*) FROM memory_confirmations WHERE issue_id = ?", (gone,)) == 0
    assert scalar(db, "SELECT count(*) FROM memory_usage WHERE issue_id = ?", (gone,)) == 0
    with pytest.raises(FixMemoryError) as err:
        mem.forget(gone)
    assert err.value.code == "not_found"
    with pytest.raises(FixMemoryError):
        mem.show(gone)


def test_a_write_that_fails_leaves_nothing_behind(mem, db):
    issue_id = submit(mem, "shop-1")["issue_id"]
    db.execute("DROP TABLE memory_usage")
    with pytest.raises(Exception):  # noqa: B017 - any error the database raises; what matters is what is left
        mem.confirm(issue_id, "shop-2", False)
    row = rows(db, "SELECT failure_count FROM memory_issues WHERE issue_id = ?", (issue_id,))[0]
    assert row["failure_count"] == 0
    assert scalar(db, "SELECT count(*) FROM memory_confirmations") == 0
