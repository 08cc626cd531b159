"""The address guard (``mail.net._guard``): the policy's rules, numeric IPv4 spellings read
as ``inet_aton`` reads them (compared with ``socket.inet_aton`` itself), resolution, and a
guarded ``aiohttp`` session against a real loopback server that redirects.

No test connects to an address outside loopback: the refused ones are refused before any
socket is connected, and the widened ones are only checked, never contacted.
"""

from __future__ import annotations

import itertools
import random
import re
import socket
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from mail.errors import AddressRefusedError
from mail.net import AddressPolicy, SessionSource
from mail.net._guard import normalize, numeric_ipv4, resolve, resolve_sync

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


#: numeric spellings of 169.254.169.254 that inet_aton reads
METADATA_SPELLINGS = [
    "2852039166",
    "0251.0376.0251.0376",
    "0xA9FEA9FE",
    "0XA9FEa9fe",
    "169.254.43518",
    "0xa9.0376.43518",
    "169.16689662",
    "0251.0xFE.0xa9FE",
    "00000000251.254.169.254",
    "2852039166.",  # a trailing dot ends a name
]


@pytest.mark.parametrize("host", METADATA_SPELLINGS)
def test_numeric_forms_are_judged_as_the_address_they_spell(host: str) -> None:
    assert str(numeric_ipv4(host.rstrip("."))) == "169.254.169.254"
    # check_host looks nothing up: the refusal cannot depend on the system's resolver
    with pytest.raises(AddressRefusedError, match="refused by the rule 'link-local'") as info:
        AddressPolicy().check_host(host)
    assert info.value.address == "169.254.169.254" and info.value.host == host
    assert str(info.value).startswith(
        f"connection to {host} refused by the rule 'link-local': 169.254.169.254 is a "
        "link-local (metadata) address"
    )


@pytest.mark.parametrize("host", METADATA_SPELLINGS)
async def test_resolving_a_numeric_form_refuses_it(host: str) -> None:
    with pytest.raises(AddressRefusedError, match=r"169\.254\.169\.254 is a link-local"):
        await resolve(host, 80, AddressPolicy())
    with pytest.raises(AddressRefusedError, match="'link-local'"):
        resolve_sync(host, 80, AddressPolicy())


def test_numeric_forms_follow_the_policy_lists() -> None:
    assert str(numeric_ipv4("2130706433")) == "127.0.0.1"
    AddressPolicy().check_host("2130706433")  # loopback: allowed for peers
    with pytest.raises(AddressRefusedError, match="'loopback'"):
        AddressPolicy(allow_loopback=False).check_host("0x7f.1")
    AddressPolicy(allow_hosts=("2852039166",)).check_host("2852039166")  # named: allowed
    AddressPolicy(allow_networks=("169.254.0.0/16",)).check_host("0xA9FEA9FE")
    with pytest.raises(AddressRefusedError, match="deny_networks"):
        AddressPolicy(deny_networks=("10.0.0.0/8",)).check_host("167772161")  # 10.0.0.1


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("0", "0.0.0.0"),  # noqa: S104  # an address read, not bound
        ("1", "0.0.0.1"),
        ("4294967295", "255.255.255.255"),
        ("0xffffffff", "255.255.255.255"),
        ("037777777777", "255.255.255.255"),
        ("1.2", "1.0.0.2"),
        ("1.16777215", "1.255.255.255"),
        ("1.2.3", "1.2.0.3"),
        ("1.2.65535", "1.2.255.255"),
        ("1.2.3.4", "1.2.3.4"),
        ("0x1.0x2.0x3.0x4", "1.2.3.4"),
        ("01.02.03.04", "1.2.3.4"),
        ("1.2.3.4 trailing words", "1.2.3.4"),  # inet_aton stops at white space
        ("1.2.3.4\t", "1.2.3.4"),
    ],
)
def test_numeric_ipv4_reads_what_inet_aton_reads(text: str, address: str) -> None:
    assert str(numeric_ipv4(text)) == address


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1.2.3.4.5",  # five parts
        "0x",  # no hex digit
        "08",  # not octal
        "09.1.1.1",
        "1.",  # nothing after the dot
        ".1",
        "1..2",
        "4294967296",  # past 32 bits
        "0x100000000",
        "256.1",  # a part before the last is a byte
        "1.16777216",  # the last fills three bytes at most
        "1.2.65536",
        "1.2.3.256",
        "-1",
        "+1",
        " 1",  # white space first is not a number
        "1x",
        "0x1g",
        "1.2.3.4x",
        "\uff11",  # FULLWIDTH DIGIT ONE: a digit, but not an ASCII one
        "example.com",
        "localhost",
        "::1",
        "9" * 100_000,
    ],
)
def test_numeric_ipv4_leaves_names_to_the_resolver(text: str) -> None:
    assert numeric_ipv4(text) is None


def _inet_aton(text: str) -> bytes | None:
    try:
        return socket.inet_aton(text)
    except OSError:
        return None


def _spelled(text: str) -> bytes | None:
    address = numeric_ipv4(text)
    return None if address is None else address.packed


def test_numeric_ipv4_agrees_with_inet_aton_on_every_short_string() -> None:
    """Every string of up to five characters of a small alphabet that holds each kind of
    digit, prefix, separator and terminator."""
    alphabet = "0189afxX. "
    texts = ["".join(chars) for n in range(6) for chars in itertools.product(alphabet, repeat=n)]
    assert len(texts) == 111_111
    differ = [t for t in texts if _spelled(t) != _inet_aton(t)]
    assert differ == []


def test_numeric_ipv4_agrees_with_inet_aton_on_generated_addresses() -> None:
    """Dotted numbers in every base (leading zeros, upper and lower case, values around
    each limit), now and then with a stray character; seeded, so it is the same run."""
    rng = random.Random(20_240_601)
    limits = [0, 1, 7, 8, 255, 256, 0xFFFF, 0x10000, 0xFFFFFF, 0x1000000, 0xFFFFFFFF, 1 << 32]

    def part() -> str:
        value = rng.choice([*limits, rng.randrange(1 << 34)])
        zeros = "0" * rng.randint(0, 3)
        text = rng.choice(
            [str(value), f"0{zeros}{value:o}", f"{rng.choice(['0x', '0X'])}{zeros}{value:x}"]
        )
        return text + (rng.choice("9gx. \t") if rng.random() < 0.05 else "")

    texts = [".".join(part() for _ in range(rng.randint(1, 5))) for _ in range(50_000)]
    read = [t for t in texts if _inet_aton(t) is not None]
    assert len(read) > 5_000  # many are addresses, not only refusals
    assert [t for t in texts if _spelled(t) != _inet_aton(t)] == []


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
        ("http://2852039166/", "link-local"),
        ("http://0251.0376.0251.0376/", "link-local"),
        ("http://0xa9.0376.43518/", "link-local"),
        ("http://169.254.43518/", "link-local"),
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


@pytest.mark.parametrize(
    "target",
    [
        "http://169.254.169.254/",
        "http://0xA9FEA9FE/",
        "http://2852039166/",
        "http://169.254.43518/",
    ],
)
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
