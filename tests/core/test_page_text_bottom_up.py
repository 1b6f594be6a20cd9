"""The healer's page index joins a wrapper's text from its children's: the very text lexbor reads whole."""

from __future__ import annotations

import pathlib

import pytest

from healerd.core.heal.page import texts
from healerd.core.heal.page.fingerprint import Page

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"


def _whole(page: Page) -> list[str]:
    """Each element's text read whole by lexbor and collapsed: what the index held before."""
    return [" ".join(n.text(deep=True, separator="").split()) for n in page.nodes]


TRICKY = [
    # white space only between children, around them, and none at all between two words
    "<div>\n  <p>one</p>\n  <p>two</p>\n</div><div><b>glued</b><i>words</i></div>",
    # direct text beside element children; a comment between them is no text
    "<ul> lead <li>a</li>mid<!-- not text --><li> b </li> tail </ul>",
    # non-breaking and other Unicode spaces are white space for str.split too
    "<p>price:\u00a0<span>12\u2009€</span>\u3000<em>\u00a0</em><em>x</em></p>",
    # empty elements, white-space-only elements and script text
    "<section><span></span><span> </span><span>\t</span><b>x</b><script>var a = 1;</script></section>",
    # a template's content and nested wrappers
    "<main><template><p>hidden</p></template><div><div><div> deep\n text </div></div></div></main>",
]


@pytest.mark.parametrize("html", TRICKY)
@pytest.mark.parametrize("join_from", [1, texts.JOIN_FROM])
def test_joined_texts_are_lexbors(html: str, join_from: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # join_from=1 joins every element with a child from its children, so the join is what is tested
    monkeypatch.setattr(texts, "JOIN_FROM", join_from)
    page = Page(html)
    assert page.texts == _whole(page)


def test_a_whole_page_wrapper_is_joined_not_read() -> None:
    rows = "".join(f"<li><a>Item {k}</a>\n <span> ${k}.50 </span></li>\n" for k in range(400))
    page = Page(f"<html><body><main>\n<ul>\n{rows}</ul></main></body></html>")
    assert page.texts == _whole(page)
    ul = page.tags.index("ul")
    assert sum(len(page.texts[c]) for c in page.children[ul]) >= texts.JOIN_FROM


def test_join_of_pieces() -> None:
    parts = ["  a b ", "", "\n", "c", "d  ", " ", "e"]
    assert texts.join([texts.piece(p) for p in parts]) == texts.piece("".join(parts))
    assert texts.join([]) == texts.piece("")
    assert texts.join([texts.piece(" "), texts.piece("\t")]) == texts.piece(" \t")


def _pages() -> list[pathlib.Path]:
    found: list[pathlib.Path] = []
    for corpus in ("corpus", "corpus2"):
        found += sorted((DATA / corpus).rglob("*.html"))
    return found


@pytest.mark.parametrize("join_from", [1, texts.JOIN_FROM])
def test_corpus_pages_index_the_same_texts(join_from: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(texts, "JOIN_FROM", join_from)
    pages = _pages()
    assert len(pages) > 100
    differ = [p.name for p in pages if (page := Page(p.read_text(encoding="utf-8", errors="replace"))).texts != _whole(page)]
    assert differ == []
