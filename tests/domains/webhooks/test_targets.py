"""SSRF guard: only public addresses (loopback only with the development setting); checked after DNS."""

import pytest

from proxyplane.domains.webhooks.targets import TargetRefused, resolve

pytestmark = pytest.mark.anyio

REFUSED_ALWAYS = [
    "https://10.0.0.5/hook",
    "https://192.168.1.1/",
    "https://172.16.3.4/",
    "https://169.254.169.254/latest/meta-data",  # cloud metadata (link-local)
    "https://100.64.0.1/",  # shared address space
    "https://224.0.0.1/",  # multicast
    "https://0.0.0.0/",
    "https://240.0.0.1/",  # reserved
    "https://[fd00::1]/",
    "https://[fe80::1]/",
    "https://[::ffff:10.0.0.1]/",  # IPv4-mapped private
    "https://user:pw@93.184.216.34/",  # credentials in the URL
    "ftp://93.184.216.34/",
    "http://93.184.216.34/",  # plain http to a public address
]
LOOPBACK = [
    "https://127.0.0.1/",
    "https://localhost:8443/x",
    "https://2130706433/",
    "https://[::1]/",
    "https://127.1/",
]


@pytest.mark.parametrize("url", REFUSED_ALWAYS)
async def test_refused_even_in_development(url: str) -> None:
    for dev in (False, True):
        with pytest.raises(TargetRefused):
            await resolve(url, allow_loopback=dev)


@pytest.mark.parametrize("url", LOOPBACK)
async def test_loopback_and_names_resolving_to_it_refused_unless_development(url: str) -> None:
    with pytest.raises(TargetRefused):
        await resolve(url, allow_loopback=False)
    target = await resolve(url, allow_loopback=True)
    assert all(a.startswith("127.") or a == "::1" for a in target.addresses)


async def test_public_address_allowed_and_pinned() -> None:
    target = await resolve("https://93.184.216.34:8443/in?x=1", allow_loopback=False)
    assert target.addresses == ("93.184.216.34",)
    assert target.pinned_url("https://93.184.216.34:8443/in?x=1") == "https://93.184.216.34:8443/in?x=1"


async def test_plain_http_only_to_loopback_in_development() -> None:
    with pytest.raises(TargetRefused):
        await resolve("http://127.0.0.1:9000/", allow_loopback=False)
    target = await resolve("http://localhost:9000/hook", allow_loopback=True)
    assert target.host_header == "localhost:9000"
    assert target.pinned_url("http://localhost:9000/hook").endswith(":9000/hook")


async def test_unresolvable_host_refused() -> None:
    with pytest.raises(TargetRefused, match="cannot be resolved"):
        await resolve("https://no-such-host.invalid/", allow_loopback=True)
