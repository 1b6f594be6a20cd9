"""A feed's webhook POST (Fetcher.post) and a page's GET (Fetcher.fetch) fail alike: for the
same failure, the same error class and the same one line, from one translation of httpx's and
the OS's errors (healerd/adapters/fetch_errors.py, request_failure)."""

from __future__ import annotations

import pytest

from healerd.adapters.fetch import FetchConfig, Fetcher, FetchError
from healerd.core import errors
from tests.support.ports import refusing_socket


def failure(fn) -> FetchError:
    with pytest.raises(FetchError) as info:
        fn()
    return info.value


@pytest.fixture
def client():
    with Fetcher(FetchConfig(timeout=5.0, connect_timeout=5.0)) as f:
        yield f


def both(client: Fetcher, url: str, headers: dict | None = None) -> tuple[FetchError, FetchError]:
    got = failure(lambda: client.fetch(url, headers=headers))
    sent = failure(lambda: client.post(url, b"{}", headers=headers))
    return got, sent


def test_a_refused_connection_is_the_same_line_for_a_post():
    sock = refusing_socket()
    try:
        port = sock.getsockname()[1]
        with Fetcher(FetchConfig(timeout=5.0, connect_timeout=5.0)) as client:
            got, sent = both(client, f"http://127.0.0.1:{port}/hook")
    finally:
        sock.close()
    assert (sent.error_type, sent.message) == (got.error_type, got.message) \
        == (errors.NETWORK, f"connection refused by 127.0.0.1:{port}")


def test_a_header_that_cannot_be_sent_is_the_same_line_for_a_post(server, client):
    """A header value that is not ASCII is refused before anything is sent, in one line that
    names the rule and not the value."""
    got, sent = both(client, server.url("/hook"), headers={"Authorization": "Bearer clé-s3cret"})
    assert (sent.error_type, sent.message) == (got.error_type, got.message)
    assert sent.error_type == errors.HTTP_ERROR and "must be ASCII" in sent.message
    assert "s3cret" not in sent.message and "\n" not in sent.message
    assert server.requests == []


def test_a_host_name_that_cannot_be_encoded_is_the_same_line_for_a_post(client):
    got, sent = both(client, "http://" + "a" * 300 + ".example/hook")
    assert (sent.error_type, sent.message) == (got.error_type, got.message)
    assert sent.error_type == errors.HTTP_ERROR and sent.message.startswith("invalid URL: http://aaa")


def test_credentials_in_the_url_are_masked_in_a_posts_failure(client):
    sock = refusing_socket()
    try:
        port = sock.getsockname()[1]
        url = f"http://hookuser:hunter2-pass@127.0.0.1:{port}/hook?token=t0ken-value"
        got, sent = both(client, url, headers={"X": "é"})
    finally:
        sock.close()
    assert sent.message == got.message
    assert "hunter2-pass" not in sent.message and "t0ken-value" not in sent.message
