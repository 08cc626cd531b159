"""The guarded fetch (``mail.net.fetch`` and ``fetch_blocking``) against real loopback
servers: responses, redirects (each target checked again: scheme, then addresses), the
size cap, the one deadline, and the errors. A refused target must get no connection: a
listening loopback socket that must not see one stands in for it.

No test connects to an address outside loopback: the refused ones are refused before any
socket is connected.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from tests._http_sites import HTTPSite, connected, listening_socket

from mail.errors import AddressRefusedError
from mail.net import (
    AddressPolicy,
    FetchError,
    FetchFailedError,
    FetchPolicy,
    FetchTimeoutError,
    InvalidURLError,
    ResponseTooLargeError,
    TooManyRedirectsError,
    URLRefusedError,
    fetch,
    fetch_blocking,
)

pytestmark = pytest.mark.timeout(30)

LOOPBACK = FetchPolicy(addresses=AddressPolicy(where="the test"), timeout=5, max_bytes=10_000)


@pytest.fixture
async def site() -> AsyncIterator[HTTPSite]:
    async with HTTPSite() as server:
        yield server


@pytest.fixture
def listener() -> Iterator[tuple[socket.socket, int]]:
    with listening_socket() as found:
        yield found


# --- responses ------------------------------------------------------------------------------


async def test_a_response_with_its_status_headers_and_body(site: HTTPSite) -> None:
    response = await fetch(f"{site.url}/echo", LOOPBACK, method="post", json_body={"a": 1})
    assert (response.url, response.status, response.reason, response.ok) == (
        f"{site.url}/echo",
        200,
        "OK",
        True,
    )
    assert ("X-Echo", "yes") in response.headers
    assert json.loads(response.text)["method"] == "POST"
    assert json.loads(response.body)["body"] == {"a": 1}


async def test_an_error_status_is_a_response_not_an_error(site: HTTPSite) -> None:
    response = await fetch(f"{site.url}/status/404", LOOPBACK)
    assert (response.status, response.reason, response.ok, response.text) == (
        404,
        "Not Found",
        False,
        "nope",
    )


# --- redirects ------------------------------------------------------------------------------


async def test_redirects_are_followed_and_303_becomes_a_get_without_body(site: HTTPSite) -> None:
    arrived = await fetch(f"{site.url}/hops/3", LOOPBACK)
    assert (arrived.text, arrived.url) == ("arrived", f"{site.url}/hops/0")
    seen = await fetch(
        f"{site.url}/go?code=303&to=/echo", LOOPBACK, method="POST", json_body={"a": 1}
    )
    assert json.loads(seen.text)["method"] == "GET"
    assert json.loads(seen.text)["body"] is None
    kept = await fetch(
        f"{site.url}/go?code=307&to=/echo", LOOPBACK, method="PUT", json_body={"kept": True}
    )
    assert json.loads(kept.text)["method"] == "PUT"
    assert json.loads(kept.text)["body"] == {"kept": True}


async def test_credentials_go_to_the_first_origin_only(site: HTTPSite) -> None:
    headers = {"Authorization": "Bearer t", "Cookie": "c=1", "X-Other": "o"}
    same = await fetch(f"{site.url}/go?to=/echo", LOOPBACK, headers=headers)
    assert json.loads(same.text)["headers"]["Authorization"] == "Bearer t"
    # localhost is another origin than 127.0.0.1, on the same server
    elsewhere = site.url.replace("127.0.0.1", "localhost")
    other = await fetch(f"{site.url}/go?to={elsewhere}/echo", LOOPBACK, headers=headers)
    seen = json.loads(other.text)["headers"]
    assert "Authorization" not in seen
    assert "Cookie" not in seen
    assert seen["X-Other"] == "o"


async def test_too_many_redirects(site: HTTPSite) -> None:
    two = FetchPolicy(addresses=AddressPolicy(), timeout=5, max_bytes=1000, max_redirects=2)
    assert (await fetch(f"{site.url}/hops/2", two)).text == "arrived"
    with pytest.raises(TooManyRedirectsError) as info:
        await fetch(f"{site.url}/hops/3", two)
    assert info.value.url == f"{site.url}/hops/3"
    assert info.value.last == f"{site.url}/hops/0"
    assert str(info.value) == f"more than 2 redirects; the last one was to {site.url}/hops/0"


@pytest.mark.parametrize(
    ("target", "rule"),
    [
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://0xA9FEA9FE/", "link-local"),
        ("http://metadata.google.internal/", "metadata"),
    ],
)
async def test_a_redirect_to_a_forbidden_address_is_refused(
    site: HTTPSite, target: str, rule: str
) -> None:
    with pytest.raises(AddressRefusedError, match=f"refused by the rule '{rule}'") as info:
        await fetch(f"{site.url}/go?to={target}", LOOPBACK)
    assert info.value.rule == rule


async def test_a_redirect_to_a_denied_address_makes_no_connection(
    site: HTTPSite, listener: tuple[socket.socket, int]
) -> None:
    sock, port = listener
    # the site's address allowed, the listener's denied: only the redirect is refused
    policy = FetchPolicy(
        addresses=AddressPolicy(deny_networks=("127.0.0.2/32",)), timeout=5, max_bytes=1000
    )
    with pytest.raises(AddressRefusedError, match="deny_networks"):
        await fetch(f"{site.url}/go?to=http://127.0.0.2:{port}/", policy)
    assert not connected(sock)


async def test_a_redirect_to_a_scheme_not_allowed_is_refused_before_connecting(
    site: HTTPSite, listener: tuple[socket.socket, int]
) -> None:
    # as an https-only fetch refuses a redirect to http://: here http-only, sent to https://
    sock, port = listener
    http_only = FetchPolicy(addresses=AddressPolicy(), timeout=5, max_bytes=1000, schemes=("http",))
    target = f"https://127.0.0.1:{port}/"
    with pytest.raises(URLRefusedError) as info:
        await fetch(f"{site.url}/go?code=301&to={target}", http_only)
    assert (info.value.target, info.value.redirect, info.value.location) == (target, 301, target)
    assert str(info.value) == (
        f"only absolute http:// URLs can be fetched; refused a redirect to '{target}'"
    )
    assert not connected(sock)
    with pytest.raises(URLRefusedError, match="refused a redirect to 'file:///etc/passwd'"):
        await fetch(f"{site.url}/go?to=file:///etc/passwd", LOOPBACK)


async def test_a_relative_redirect_is_resolved_against_the_url(site: HTTPSite) -> None:
    response = await fetch(f"{site.url}/go?to=../hops/0", LOOPBACK)
    assert response.url == f"{site.url}/hops/0"


# --- the URL asked for ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "schemes"),
    [
        ("ftp://127.0.0.1/x", ("https", "http")),
        ("file:///etc/passwd", ("https", "http")),
        ("/relative", ("https", "http")),
        ("http:///no-host", ("https", "http")),
        ("http://127.0.0.1/", ("https",)),
    ],
)
async def test_a_bad_scheme_is_refused(url: str, schemes: tuple[str, ...]) -> None:
    policy = FetchPolicy(addresses=AddressPolicy(), timeout=5, max_bytes=1000, schemes=schemes)
    with pytest.raises(URLRefusedError) as info:
        await fetch(url, policy)
    assert (info.value.url, info.value.target, info.value.redirect) == (url, url, None)
    assert str(info.value).startswith("only absolute ")


async def test_an_unparsable_url_is_invalid() -> None:
    with pytest.raises(InvalidURLError, match=r"invalid URL 'http://\[::1/'"):
        await fetch("http://[::1/", LOOPBACK)


async def test_a_forbidden_address_is_refused_without_a_connection(
    listener: tuple[socket.socket, int],
) -> None:
    sock, port = listener
    strict = FetchPolicy(addresses=AddressPolicy(allow_loopback=False), timeout=5, max_bytes=1000)
    with pytest.raises(AddressRefusedError, match="'loopback'"):
        await fetch(f"http://127.0.0.1:{port}/", strict)
    assert not connected(sock)


# --- limits ---------------------------------------------------------------------------------


async def test_the_size_cap(site: HTTPSite) -> None:
    capped = FetchPolicy(addresses=AddressPolicy(), timeout=5, max_bytes=5000)
    assert len((await fetch(f"{site.url}/big?n=5000", capped)).body) == 5000
    with pytest.raises(ResponseTooLargeError) as info:
        await fetch(f"{site.url}/go?to=/big?n=50000", capped)
    assert (info.value.at, info.value.max_bytes, info.value.status) == (
        f"{site.url}/big?n=50000",
        5000,
        200,
    )
    assert str(info.value) == f"the response from {site.url}/big?n=50000 is larger than 5000 bytes"


async def test_the_deadline_covers_the_whole_fetch(site: HTTPSite) -> None:
    # Each read gets data in 20 ms, far within any per-read timeout: only the deadline
    # on the whole fetch stops it.
    quick = FetchPolicy(addresses=AddressPolicy(), timeout=0.5, max_bytes=1_000_000)
    started = time.monotonic()
    with pytest.raises(FetchTimeoutError) as info:
        await fetch(f"{site.url}/trickle", quick)
    assert time.monotonic() - started < 3.0
    assert str(info.value) == f"no complete answer from {site.url}/trickle within 0.5 s"


async def test_a_closed_port_is_a_failed_connection(listener: tuple[socket.socket, int]) -> None:
    sock, port = listener
    sock.close()  # nothing listens there any more
    with pytest.raises(FetchFailedError, match="failed: could not connect") as info:
        await fetch(f"http://127.0.0.1:{port}/", LOOPBACK)
    assert info.value.__cause__ is info.value.cause
    assert isinstance(info.value, FetchError)


# --- fetch_blocking -------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"accept": self.headers.get("Accept")}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture
def threaded_url() -> Iterator[str]:
    """A server in its own thread: blocking code waits on it without stopping it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_fetch_blocking_from_blocking_code(threaded_url: str) -> None:
    response = fetch_blocking(threaded_url, LOOPBACK, headers={"Accept": "application/json"})
    assert json.loads(response.body) == {"accept": "application/json"}


async def test_fetch_blocking_inside_an_event_loop(threaded_url: str) -> None:
    # e.g. a swarms.json loaded by a coroutine: the fetch runs its own loop in a thread
    assert (fetch_blocking(threaded_url, LOOPBACK)).ok


def test_fetch_blocking_keeps_the_deadline(listener: tuple[socket.socket, int]) -> None:
    _, port = listener  # connects, then nothing is ever answered
    quick = FetchPolicy(addresses=AddressPolicy(), timeout=0.3, max_bytes=1000)
    started = time.monotonic()
    with pytest.raises(FetchTimeoutError, match=r"within 0\.3 s"):
        fetch_blocking(f"http://127.0.0.1:{port}/", quick)
    assert time.monotonic() - started < 2.0


def test_fetch_blocking_raises_what_fetch_raises() -> None:
    with pytest.raises(URLRefusedError):
        fetch_blocking("ftp://127.0.0.1/", LOOPBACK)
