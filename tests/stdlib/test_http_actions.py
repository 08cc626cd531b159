"""``mail.stdlib.http.actions`` against a loopback aiohttp server the test starts, with
``[stdlib.http]`` configured to allow loopback; and the refusals, each made before any
connection (a listening loopback socket that must get none, or an address whose connection
would fail differently)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from tests._http_sites import HTTPSite, connected, listening_socket

from mail.api import MAILAction
from mail.stdlib import http as http_package
from mail.stdlib.http import actions
from mail.stdlib.http.actions import (
    HTTP_PATCH_PARAMETERS,
    HTTP_POST_PARAMETERS,
    http_delete,
    http_get,
    http_head,
    http_options,
    http_patch,
    http_post,
    http_put,
)

pytestmark = pytest.mark.timeout(30)

LOOPBACK = {"allow_loopback": True, "timeout": 5.0}


@pytest.fixture
async def site() -> AsyncIterator[HTTPSite]:
    async with HTTPSite(status_text="nope, not here") as server:
        yield server


@pytest.fixture
def listener() -> Iterator[tuple[socket.socket, int]]:
    with listening_socket() as found:
        yield found


# --- the surface ---------------------------------------------------------------------------


def test_the_actions_are_mail_actions_with_v136_schemas() -> None:
    for name in http_package.__all__:
        action = getattr(actions, name)
        assert isinstance(action, MAILAction)
        assert action.name == name
        assert getattr(http_package, name) is action
    assert HTTP_POST_PARAMETERS["required"] == ["url", "headers", "body"]
    assert HTTP_PATCH_PARAMETERS["required"] == ["url", "body"]
    assert actions.HTTP_GET_PARAMETERS["required"] == ["url"]


# --- every verb, headers, bodies -----------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "method", "body"),
    [
        (http_get, "GET", None),
        (http_post, "POST", {"a": 1}),
        (http_put, "PUT", {"b": [1, 2]}),
        (http_delete, "DELETE", None),
        (http_patch, "PATCH", {"c": "d"}),
    ],
)
async def test_every_verb_sends_headers_and_json_bodies(
    use_settings: Any, site: HTTPSite, action: MAILAction, method: str, body: Any
) -> None:
    use_settings(http=LOOPBACK)
    args: dict[str, Any] = {"url": f"{site.url}/echo", "headers": {"X-Token": "t-123"}}
    if body is not None:
        args["body"] = body
    result = await action(args)
    echoed = json.loads(result)
    assert echoed["method"] == method
    assert echoed["headers"]["X-Token"] == "t-123"
    assert echoed["body"] == body
    if body is not None:
        assert echoed["content_type"] == "application/json"


async def test_head_returns_the_status_line_and_headers(use_settings: Any, site: HTTPSite) -> None:
    use_settings(http=LOOPBACK)
    result = await http_head({"url": f"{site.url}/echo", "headers": {"X-Token": "h"}})
    lines = result.splitlines()
    assert lines[0] == "HTTP 200 OK"
    assert "X-Echo: yes" in lines
    assert site.seen[-1]["method"] == "HEAD"
    assert site.seen[-1]["headers"]["X-Token"] == "h"


async def test_options_returns_status_headers_and_body(use_settings: Any, site: HTTPSite) -> None:
    use_settings(http=LOOPBACK)
    result = await http_options({"url": f"{site.url}/echo", "headers": {"X-Token": "o"}})
    head, _, body = result.partition("\n\n")
    assert head.splitlines()[0] == "HTTP 200 OK"
    assert json.loads(body)["method"] == "OPTIONS"
    assert site.seen[-1]["headers"]["X-Token"] == "o"


async def test_a_non_2xx_status_is_an_error_with_an_excerpt(
    use_settings: Any, site: HTTPSite
) -> None:
    use_settings(http=LOOPBACK)
    result = await http_get({"url": f"{site.url}/status/404"})
    assert result == "Error: HTTP 404 Not Found: nope, not here"
    assert (await http_head({"url": f"{site.url}/status/500"})).startswith(
        "Error: HTTP 500 Internal Server Error"
    )


# --- bad arguments -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "args", "message"),
    [
        (http_get, {}, "Error: 'url' must be a non-empty string"),
        (http_get, {"url": 5}, "Error: 'url' must be a non-empty string"),
        (http_get, {"url": "ftp://example.com/x"}, "Error: only absolute http:// and https://"),
        (http_get, {"url": "/relative"}, "Error: only absolute http:// and https://"),
        (http_get, {"url": "http://x", "headers": "no"}, "Error: 'headers' must be a JSON object"),
        (http_get, {"url": "http://x", "headers": {"a": 1}}, "Error: 'headers' must map"),
        (http_post, {"url": "http://x", "body": {}}, "Error: 'headers' must be a JSON object"),
        (http_patch, {"url": "http://x", "body": [1]}, "Error: 'body' must be a JSON object"),
    ],
)
async def test_bad_arguments_are_errors(
    use_settings: Any, action: MAILAction, args: dict[str, Any], message: str
) -> None:
    use_settings(http=LOOPBACK)
    assert (await action(args)).startswith(message)


# --- redirects ------------------------------------------------------------------------------


async def test_redirects_are_followed_and_303_becomes_get(
    use_settings: Any, site: HTTPSite
) -> None:
    use_settings(http=LOOPBACK)
    assert await http_get({"url": f"{site.url}/hops/3"}) == "arrived"
    result = await http_post(
        {"url": f"{site.url}/go?code=303&to=/echo", "headers": {"X-Token": "r"}, "body": {"a": 1}}
    )
    assert json.loads(result)["method"] == "GET"
    assert site.seen[-1]["headers"]["X-Token"] == "r"


async def test_307_keeps_the_method_and_body(use_settings: Any, site: HTTPSite) -> None:
    use_settings(http=LOOPBACK)
    result = await http_put(
        {"url": f"{site.url}/go?code=307&to=/echo", "headers": {}, "body": {"kept": True}}
    )
    assert json.loads(result)["method"] == "PUT"
    assert json.loads(result)["body"] == {"kept": True}


async def test_too_many_redirects(use_settings: Any, site: HTTPSite) -> None:
    use_settings(http=LOOPBACK | {"max_redirects": 2})
    assert await http_get({"url": f"{site.url}/hops/2"}) == "arrived"
    result = await http_get({"url": f"{site.url}/hops/3"})
    assert result.startswith("Error: more than 2 redirects (max_redirects in [stdlib.http])")


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("http://169.254.169.254/latest/meta-data/", "'link-local'"),
        ("http://10.0.0.1/", "'private'"),
        ("file:///etc/passwd", "refused a redirect to 'file:///etc/passwd'"),
        ("gopher://127.0.0.1:70/", "refused a redirect to"),
    ],
)
async def test_a_redirect_is_checked_again(
    use_settings: Any, site: HTTPSite, target: str, expected: str
) -> None:
    use_settings(http=LOOPBACK)
    result = await http_get({"url": f"{site.url}/go?to={target}"})
    assert result.startswith("Error: ")
    assert expected in result


async def test_a_redirect_to_a_refused_loopback_port_makes_no_connection(
    use_settings: Any, site: HTTPSite, listener: tuple[socket.socket, int]
) -> None:
    sock, port = listener
    # loopback allowed, but the listener's address denied: deny_networks wins
    use_settings(http=LOOPBACK | {"deny_networks": ["127.0.0.2/32"]})
    result = await http_get({"url": f"{site.url}/go?to=http://127.0.0.2:{port}/"})
    assert "deny_networks" in result
    assert not connected(sock)


# --- limits ---------------------------------------------------------------------------------


async def test_the_response_size_cap(use_settings: Any, site: HTTPSite) -> None:
    use_settings(http=LOOPBACK | {"max_response_bytes": 5000})
    assert len(await http_get({"url": f"{site.url}/big?n=5000"})) == 5000
    result = await http_get({"url": f"{site.url}/big?n=50000"})
    assert result == (
        f"Error: the response from {site.url}/big?n=50000 is larger than 5000 bytes "
        "(max_response_bytes in [stdlib.http])"
    )


async def test_the_timeout(use_settings: Any, site: HTTPSite) -> None:
    use_settings(http={"allow_loopback": True, "timeout": 0.5})
    result = await http_get({"url": f"{site.url}/slow"})
    assert site.slow_started.is_set()
    assert (
        result
        == f"Error: no complete answer from {site.url}/slow within 0.5 s (timeout in [stdlib.http])"
    )


async def test_a_connection_failure(use_settings: Any, listener: tuple[socket.socket, int]) -> None:
    sock, port = listener
    sock.close()  # nothing listens there any more
    use_settings(http=LOOPBACK)
    result = await http_get({"url": f"http://127.0.0.1:{port}/"})
    assert result.startswith(
        f"Error: request to http://127.0.0.1:{port}/ failed: could not connect"
    )


# --- refusals, before any connection --------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "localhost", "2130706433", "0x7f000001", "[::ffff:127.0.0.1]", "127.1"],
)
async def test_loopback_is_refused_by_default_without_a_connection(
    use_settings: Any, listener: tuple[socket.socket, int], host: str
) -> None:
    sock, port = listener
    use_settings()  # the defaults: loopback and private refused
    result = await http_get({"url": f"http://{host}:{port}/"})
    assert "refused by the rule 'loopback'" in result
    assert "set allow_loopback = true in [stdlib.http]" in result
    assert not connected(sock)


async def test_the_listener_does_see_a_connection_when_loopback_is_allowed(
    use_settings: Any, listener: tuple[socket.socket, int]
) -> None:
    # the control of the test above: the same call, allowed, reaches the listener
    sock, port = listener
    use_settings(http={"allow_loopback": True, "timeout": 0.5})
    result = await http_get({"url": f"http://127.0.0.1:{port}/"})
    assert "within 0.5 s" in result
    assert connected(sock)


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://[::ffff:169.254.169.254]/", "link-local"),
        ("http://2852039166/", "link-local"),  # 169.254.169.254, decimal
        ("http://0xA9FEA9FE/", "link-local"),
        ("http://metadata.google.internal/computeMetadata/v1/", "metadata"),
        ("http://100.100.100.200/", "metadata"),
        ("http://10.0.0.1/", "private"),
        ("http://192.168.1.1/", "private"),
        ("http://[::ffff:10.0.0.1]/", "private"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://224.0.0.1/", "multicast"),
        ("http://[ff02::1]/", "multicast"),
    ],
)
async def test_refused_addresses(use_settings: Any, url: str, rule: str) -> None:
    # a connection to any of these would hang until the timeout (or fail otherwise): the
    # refusal, naming the rule, comes first and at once
    use_settings(http={"timeout": 20.0})
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await http_get({"url": url})
    assert result.startswith("Error: connection to ")
    assert f"refused by the rule '{rule}'" in result
    assert "[stdlib.http] in mail.toml" in result
    assert loop.time() - started < 5.0


async def test_allow_private_and_allow_networks_lift_rules(use_settings: Any) -> None:
    # checked only: an allowed private address is then contacted, so a closed port of
    # the allowed range answers with a connection error instead of a refusal
    use_settings(http={"allow_private": True, "timeout": 0.5})
    assert "rule 'private'" not in await http_get({"url": "http://10.255.255.1/"})
    use_settings(http={"allow_networks": ["10.255.255.0/24"], "timeout": 0.5})
    assert "rule 'private'" not in await http_get({"url": "http://10.255.255.1/"})
    use_settings(http={"deny_hosts": ["*.example.com"]})
    assert "deny_hosts" in await http_get({"url": "http://api.example.com/"})


async def test_a_host_name_that_does_not_resolve_is_an_error_result(use_settings: Any) -> None:
    """Regression: a host name that did not resolve made the action raise
    ``socket.gaierror`` instead of answering ``Error: ...``."""
    use_settings(http={"timeout": 10.0})
    result = await http_get({"url": "http://nonexistent.invalid/"})
    assert result.startswith("Error: ")
