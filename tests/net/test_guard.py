"""The address guard (``mail.net._guard``): the policy's rules, resolution as the OS
resolves, and a guarded ``aiohttp`` session against a real loopback server that redirects.

No test connects to an address outside loopback: the refused ones are refused before any
socket is connected, and the widened ones are only checked, never contacted.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from mail.errors import AddressRefusedError
from mail.net import AddressPolicy, SessionSource
from mail.net._guard import normalize, resolve, resolve_sync

pytestmark = pytest.mark.timeout(30)

REFUSED = [
    ("169.254.169.254", "link-local"),
    ("::ffff:169.254.169.254", "link-local"),
    ("fe80::1", "link-local"),
    ("0.0.0.0", "unspecified"),  # noqa: S104  # checked, not bound
    ("::", "unspecified"),
    ("224.0.0.1", "multicast"),
    ("ff02::1", "multicast"),
    ("fd00:ec2::254", "metadata"),
]


@pytest.mark.parametrize(("address", "rule"), REFUSED)
def test_default_policy_refuses_and_names_the_rule(address: str, rule: str) -> None:
    with pytest.raises(AddressRefusedError, match=f"refused by the rule '{rule}'") as info:
        AddressPolicy().check_address(address)
    assert info.value.rule == rule


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "10.1.2.3", "192.168.0.7", "fd12::1"])
def test_default_policy_allows_loopback_and_private(address: str) -> None:
    AddressPolicy().check_address(address)


def test_flags_refuse_loopback_and_private() -> None:
    policy = AddressPolicy(allow_loopback=False, allow_private=False)
    with pytest.raises(AddressRefusedError, match="'loopback'"):
        policy.check_address("127.0.0.1")
    with pytest.raises(AddressRefusedError, match="'private'"):
        policy.check_address("10.0.0.1")


def test_ipv4_mapped_addresses_count_as_ipv4() -> None:
    assert str(normalize("::ffff:169.254.169.254")) == "169.254.169.254"
    assert str(normalize("fe80::1%eth0")) == "fe80::1"


@pytest.mark.parametrize("host", ["0xA9FEA9FE", "2852039166", "169.254.43518"])
async def test_numeric_forms_resolve_as_the_os_resolves_them(host: str) -> None:
    with pytest.raises(AddressRefusedError, match=r"169\.254\.169\.254 is a link-local"):
        await resolve(host, 80, AddressPolicy())
    with pytest.raises(AddressRefusedError, match="'link-local'"):
        resolve_sync(host, 80, AddressPolicy())


async def test_metadata_names_are_refused_before_they_are_looked_up() -> None:
    with pytest.raises(AddressRefusedError, match="'metadata'") as info:
        await resolve("Metadata.Google.Internal.", 80, AddressPolicy())
    assert info.value.address is None


def test_allow_networks_lifts_a_built_in_rule() -> None:
    """Widening: the guard no longer refuses (nothing is contacted here)."""
    policy = AddressPolicy(allow_networks=("169.254.0.0/16",))
    policy.check("169.254.169.254", ["169.254.169.254"])
    with pytest.raises(AddressRefusedError, match="'link-local'"):
        policy.check("fe80::1", ["fe80::1"])


def test_deny_networks_narrows_and_wins_over_allow() -> None:
    policy = AddressPolicy(deny_networks=("127.0.0.0/8",), allow_networks=("127.0.0.1",))
    with pytest.raises(
        AddressRefusedError, match=re.escape("127.0.0.1 is in 127.0.0.0/8 of deny_networks")
    ):
        policy.check("localhost", ["127.0.0.1"])


def test_host_lists() -> None:
    policy = AddressPolicy(
        deny_hosts=("*.internal.example", "bad.test"),
        allow_hosts=("metadata.google.internal", "peer.test"),
        where="[server.interswarm]",
    )
    with pytest.raises(AddressRefusedError, match=re.escape("deny_hosts in [server.interswarm]")):
        policy.check("a.internal.example", ["10.0.0.1"])
    with pytest.raises(AddressRefusedError, match="deny_hosts"):
        policy.check("BAD.test.", ["10.0.0.1"])
    policy.check("metadata.google.internal", ["169.254.169.254"])  # allowed by name
    policy.check("peer.test", ["169.254.1.1"])
    with pytest.raises(AddressRefusedError, match="'link-local'"):
        policy.check("other.test", ["127.0.0.1", "169.254.1.1"])  # any address refuses


def test_a_bad_network_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="expected an IP network"):
        AddressPolicy(deny_networks=("10.0.0.0/33",))


# --- a guarded aiohttp session ---------------------------------------------------------------


@pytest.fixture
async def redirector() -> AsyncIterator[str]:
    """A loopback server: ``/to?u=<url>`` answers 302 to ``<url>``; ``/`` answers 200."""

    async def to(request: web.Request) -> web.Response:
        raise web.HTTPFound(request.query["u"])

    async def root(_request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_get("/to", to)
    app.router.add_get("/", root)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@pytest.fixture
async def guarded() -> AsyncIterator[aiohttp.ClientSession]:
    source = SessionSource(policy=AddressPolicy())
    try:
        yield source.get()
    finally:
        await source.aclose()


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("http://169.254.169.254/", "link-local"),
        ("http://[::ffff:169.254.169.254]/", "link-local"),
        ("http://0xA9FEA9FE/", "link-local"),
        ("http://[fe80::1]/", "link-local"),
        ("http://0.0.0.0:1/", "unspecified"),
        ("http://224.0.0.1/", "multicast"),
        ("http://metadata.google.internal/", "metadata"),
    ],
)
async def test_guarded_session_refuses_before_connecting(
    guarded: aiohttp.ClientSession, url: str, rule: str
) -> None:
    with pytest.raises(AddressRefusedError, match=f"'{rule}'"):
        async with guarded.get(url, timeout=aiohttp.ClientTimeout(total=5)):
            pass


@pytest.mark.parametrize("target", ["http://169.254.169.254/", "http://0xA9FEA9FE/"])
async def test_guarded_session_checks_every_redirect(
    guarded: aiohttp.ClientSession, redirector: str, target: str
) -> None:
    async with guarded.get(f"{redirector}/", timeout=aiohttp.ClientTimeout(total=5)) as ok:
        assert ok.status == 200  # loopback is allowed
    with pytest.raises(AddressRefusedError, match="'link-local'"):
        async with guarded.get(
            f"{redirector}/to", params={"u": target}, timeout=aiohttp.ClientTimeout(total=5)
        ):
            pass
