"""The Validator's pure part (healerd.actors.validator.judge) on pages a worker sent back
compressed only: the text is decompressed when validation must read it, and only then."""

from __future__ import annotations

from healerd.actors.messages import ExtractedPage, ScrapeJob
from healerd.actors.validator import judge
from healerd.core import errors
from healerd.core.blueprint import from_dict
from healerd.core.extract import extract
from healerd.core.pagecodec import compress_page

BP = from_dict({"url": "http://shop.example/list", "items": "li.p",
                "fields": {"name": {"css": ".n"}, "price": {"css": ".v", "type": "float"}}})

LISTING = "<html><body><ul>" + "".join(
    f'<li class="p"><span class="n">Widget {i}</span><span class="v">${i}.99</span></li>' for i in range(20)
) + "</ul></body></html>"

CHALLENGE = ("<html><head><title>Just a moment...</title></head><body><h1>Checking your browser before "
             "accessing shop.example</h1><p>Please enable JavaScript and cookies to continue.</p>"
             "<div id=\"cf-challenge-running\"></div></body></html>")


def compressed_only(html: str) -> ExtractedPage:
    """An ExtractedPage as a worker's answer makes it: records, and the page only in snapshot_z."""
    job = ScrapeJob(name="shop", url="http://shop.example/list", host="shop.example",
                    blueprint_json=BP.to_json(), version=1, etag=None, last_modified=None)
    return ExtractedPage(job=job, started_at=1.0, finished_at=2.0, status=200, html=None, page_sha="x" * 64,
                         extraction=extract(html, BP), snapshot_z=compress_page(html))


def test_a_page_that_fails_is_read_from_its_compressed_snapshot_for_the_block_page_check():
    page = compressed_only(CHALLENGE)
    outcome = judge(page, [20, 20, 20], None)
    assert not outcome.ok and outcome.error_type == errors.BLOCKED
    assert page.html == CHALLENGE   # decompressed for the check, and kept for the heal that may follow
    assert page.page_text() == CHALLENGE


def test_a_page_that_passes_is_never_decompressed():
    page = compressed_only(LISTING)
    outcome = judge(page, [20, 20, 20], None)
    assert outcome.ok and outcome.item_count == 20
    assert page.html is None and outcome.html is None and outcome.snapshot_z == page.snapshot_z
