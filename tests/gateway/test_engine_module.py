"""The stale-engine seam (gateway/engine_module.py): an engine module that lacks part of the core is
dropped and the pure-Python path serves the connection; one that lacks an optional feature serves with
that feature off. Each is logged once. The stale engines here are the real compiled engine with names
hidden (what an older build of csrc/ looks like from Python)."""

from __future__ import annotations

import logging
import types
from typing import Any

import pytest

from proxyplane.gateway import engine_module, tunnels
from proxyplane.gateway.access import AccessTable, ServiceEntry
from proxyplane.gateway.context import Settings
from proxyplane.gateway.server import Gateway, GatewayConfig

from .clients import basic, connect_tunnel

pytestmark = pytest.mark.anyio
REAL = engine_module.load()  # the engine this checkout built


@pytest.fixture(params=[("asyncio", {"use_uvloop": True})], ids=["uvloop"])
def anyio_backend(request: Any) -> Any:
    return request.param  # uvloop: the engine would serve the tunnel listeners


class OlderEngine:
    """The real Engine type seen through an older build: the methods in ``hidden`` are not there."""

    def __init__(self, hidden: set[str]) -> None:
        self.hidden = hidden

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        assert REAL is not None
        return Hiding(REAL.Engine(*args, **kwargs), self.hidden)

    def __getattr__(self, name: str) -> Any:
        if name in self.hidden:
            raise AttributeError(name)
        assert REAL is not None
        return getattr(REAL.Engine, name)


class Hiding:
    def __init__(self, engine: Any, hidden: set[str]) -> None:
        self._engine, self._hidden = engine, hidden

    def __getattr__(self, name: str) -> Any:
        if name in self._hidden:
            raise AttributeError(name)
        return getattr(self._engine, name)


def older(names: set[str] = frozenset(), methods: set[str] = frozenset()) -> types.ModuleType:  # type: ignore[assignment]
    assert REAL is not None, "the C tunnel engine is not built (pip install -e .)"
    mod = types.ModuleType("_tunnels")
    for key, value in vars(REAL).items():
        if key not in names:
            setattr(mod, key, value)
    mod.Engine = OlderEngine(set(methods))  # type: ignore[attr-defined]
    return mod


@pytest.fixture
def fresh_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_module, "_logged", set())


def test_the_built_engine_is_current() -> None:
    assert REAL is not None
    assert engine_module.check(REAL) is REAL
    assert all(engine_module.has(REAL, feature) for feature in engine_module.FEATURES)


def test_a_stale_core_is_dropped_and_logged_once(fresh_log: None, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "proxyplane.gateway.engine_module"):
        assert engine_module.check(older(names={"CLOSED"})) is None
        assert engine_module.check(older(methods={"detach"})) is None
    stale = [r for r in caplog.records if "stale" in r.getMessage()]
    assert len(stale) == 1 and "CLOSED" in stale[0].getMessage()


def test_a_missing_feature_is_off_and_logged_once(fresh_log: None, caplog: pytest.LogCaptureFixture) -> None:
    mod = older(methods={"fast_put"})
    with caplog.at_level(logging.WARNING, "proxyplane.gateway.engine_module"):
        assert engine_module.check(mod) is mod
        assert not engine_module.has(mod, "cache")
        assert not engine_module.has(mod, "cache")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "Engine.fast_put" in lines[0]


async def serve_one(origin: Any) -> Gateway:
    table = AccessTable([ServiceEntry("s1", "rotating", "u", "pw", exit_ips={"127.0.0.1": ""})])
    gw = Gateway(table, GatewayConfig(gateway_host="127.0.0.1", gateway_http_port=0, gateway_socks_port=0),
                 settings=Settings(allow_loopback=True, connect_timeout=3.0))
    await gw.start()
    status, _reader, writer = await connect_tunnel(("127.0.0.1", gw.gateway_port("http")),
                                                   f"127.0.0.1:{origin.port}", basic("u", "pw"))
    writer.close()
    assert status == 200
    return gw


async def test_a_gateway_on_a_stale_engine_serves_on_the_python_path(
        origin: Any, fresh_log: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tunnels, "_tunnels", engine_module.check(older(names={"SOCKS_REQUEST"})))
    gw = await serve_one(origin)
    try:
        assert gw.tunnels is None  # the pure-Python protocol classes served the tunnel
    finally:
        await gw.close()


async def test_a_gateway_on_an_engine_without_the_cache_serves_with_it_off(
        origin: Any, fresh_log: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tunnels, "_tunnels", older(names={"FAST_FAILED"}))
    gw = await serve_one(origin)
    try:
        assert gw.tunnels is not None and gw.tunnels.fast is None
        assert gw.tunnels.stats()["connections"] <= 1
    finally:
        await gw.close()
