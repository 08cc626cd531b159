"""``mail.url_scheme`` (v1.3.6's name) reads ``swarm://`` links as ``mail client`` does."""

from __future__ import annotations

import pytest

from mail.url_scheme import SwarmURL, parse_swarm_url


def test_connect_link_to_a_remote_host_uses_https() -> None:
    assert parse_swarm_url("swarm://connect?server=mail.example.com&token=k") == SwarmURL(
        action="connect", server="mail.example.com", token="k", base_url="https://mail.example.com"
    )


def test_invite_link_to_loopback_uses_http_and_may_lack_a_token() -> None:
    parsed = parse_swarm_url("swarm://invite?server=127.0.0.1:8000")
    assert (parsed.action, parsed.base_url, parsed.token) == (
        "invite",
        "http://127.0.0.1:8000",
        None,
    )


@pytest.mark.parametrize("url", ["http://x", "swarm://other?server=x", "swarm://connect"])
def test_other_links_are_refused(url: str) -> None:
    with pytest.raises(ValueError, match="swarm link"):
        parse_swarm_url(url)
