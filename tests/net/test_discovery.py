"""What an agent's ``discover_swarms`` may make the server fetch (DESIGN.md decision 7).

The policy on its own, then the router against real peers on ``127.0.0.1``: a refused URL
is never contacted, and listed swarms outside the policy are not registered.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.net.test_registry import LOCAL, LOCAL_URL, Peer, PeerFactory

from mail.errors import ConfigurationError, PermissionDeniedError
from mail.net import DiscoveryPolicy, InterswarmRouter, SwarmRegistry

PEERS = ["http://10.0.0.5:8000", "https://peer.example.com"]


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        ("http://127.0.0.1:8123", None),
        ("http://localhost:1/", None),
        ("http://[::1]:9", None),
        ("http://10.0.0.5:8000", None),  # a registered peer's origin
        ("https://PEER.example.com:443/", None),
        ("http://10.0.0.5:8001", "neither a registered swarm nor an allowed discovery host"),
        ("http://peer.example.com", "neither a registered swarm"),  # http: port 80, not 443
        ("http://169.254.169.254/latest", "neither a registered swarm"),
        ("ftp://127.0.0.1/", "only http:// and https:// URLs are allowed"),
        ("file:///etc/passwd", "only http:// and https:// URLs are allowed"),
        ("not a url", "only http:// and https:// URLs are allowed"),
        ("http://127.0.0.1:99999", "not a valid URL"),
    ],
)
def test_the_default_policy_allows_loopback_and_registered_peers(
    url: str, refused: str | None
) -> None:
    found = DiscoveryPolicy().refusal(url, PEERS)
    if refused is None:
        assert found is None
    else:
        assert found is not None and refused in found


def test_configured_hosts_replace_the_loopback_default() -> None:
    policy = DiscoveryPolicy(hosts=("mail.example.org", "10.1.1.1:8000", "[::2]:1"))
    assert policy.refusal("https://mail.example.org:9443", []) is None
    assert policy.refusal("http://10.1.1.1:8000", []) is None
    assert policy.refusal("http://[::2]:1", []) is None
    assert policy.refusal("http://10.1.1.1:8001", []) is not None
    assert policy.refusal("http://127.0.0.1:8000", []) is not None
    assert DiscoveryPolicy(hosts=()).refusal("http://127.0.0.1:8000", []) is not None
    assert DiscoveryPolicy(enabled=False).refusal("http://127.0.0.1:1", []) is not None


@pytest.mark.parametrize("entry", ["http://h", "h/path", "h:port", "", "u@h"])
def test_a_bad_host_entry_is_a_configuration_error(entry: str) -> None:
    with pytest.raises(ConfigurationError, match="discovery host"):
        DiscoveryPolicy(hosts=(entry,))


# --- through the router, against real peers --------------------------------------------------


@pytest.fixture
async def peer() -> AsyncIterator[PeerFactory]:
    started: list[Peer] = []

    async def start(name: str, **fields: Any) -> Peer:
        started.append(Peer(name, **fields))
        await started[-1].start()
        return started[-1]

    yield start
    for p in started:
        await p.stop()


@pytest.fixture
async def registry() -> AsyncIterator[SwarmRegistry]:
    async with SwarmRegistry(LOCAL, LOCAL_URL, env={}) as made:
        yield made


def listing(*peers: Peer) -> list[dict[str, str]]:
    return [{"swarm_name": p.name, "base_url": p.url} for p in peers]


async def test_a_refused_url_is_never_fetched(registry: SwarmRegistry, peer: PeerFactory) -> None:
    lister = await peer("lister")
    lister.swarms = listing(await peer("new"))
    router = InterswarmRouter(registry, discovery=DiscoveryPolicy(hosts=()))
    try:
        with pytest.raises(PermissionDeniedError) as info:
            await router.discover_swarms([lister.url, "file:///etc/passwd"])
    finally:
        await router.aclose()

    message = str(info.value)
    assert f"{lister.url}: host 127.0.0.1:" in message
    assert "file:///etc/passwd: only http:// and https:// URLs are allowed" in message
    assert lister.swarms_hits == 0
    assert set(registry.get_all_endpoints()) == {LOCAL}


async def test_a_registered_peer_may_be_asked_but_its_listing_is_bounded_too(
    registry: SwarmRegistry, peer: PeerFactory
) -> None:
    lister, same_host = await peer("lister"), await peer("same-host")
    lister.swarms = listing(same_host)
    await registry.register_swarm("lister", lister.url)
    only_peers = InterswarmRouter(registry, discovery=DiscoveryPolicy(hosts=()))
    loopback = InterswarmRouter(registry)
    try:
        # peers only: the listed swarm's origin is neither registered nor allowed
        assert await only_peers.discover_swarms([lister.url]) == []
        assert lister.swarms_hits == 1 and same_host.root_hits == 0
        # the default policy allows loopback hosts, so it is registered
        assert await loopback.discover_swarms([lister.url]) == ["same-host"]
    finally:
        await only_peers.aclose()
        await loopback.aclose()
    assert same_host.root_hits == 1


async def test_disabled_discovery_fetches_nothing(
    registry: SwarmRegistry, peer: PeerFactory
) -> None:
    lister = await peer("lister")
    router = InterswarmRouter(registry, discovery=DiscoveryPolicy(enabled=False))
    try:
        with pytest.raises(PermissionDeniedError, match="swarm discovery is disabled"):
            await router.discover_swarms([lister.url])
    finally:
        await router.aclose()
    assert lister.swarms_hits == 0
