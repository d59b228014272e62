"""The compiled tunnel engine (``csrc/``, module ``_tunnels``): the one place that decides whether it is
used, and which of its optional speed features are.

A checkout's ``.so`` can be older than ``csrc/`` (built before a change, copied between worktrees, a
wheel from an earlier build). Such a stale engine must not fail the gateway: when it lacks part of the
core the Python side always calls (``CORE``), or does not import at all, it is dropped (logged once) and
the pure-Python protocol classes serve every connection. An optional feature (``FEATURES``: the decision
cache, zero-copy relaying) it lacks is off (logged once), the rest of the engine still used. Every speed
trick of the engine is a feature here and a setting (context.Settings) with a plain twin.
"""

from __future__ import annotations

import logging
from types import ModuleType
from typing import Any

log = logging.getLogger(__name__)

# constants and Engine methods every engine-served connection uses (tunnels.py, tunnel_*.py)
CORE_NAMES = ("Engine", "HANDOFF", "CONNECT", "SOCKS_NOAUTH", "SOCKS_AUTH", "SOCKS_REQUEST",
              "CONNECT_FAILED", "CLOSED", "KIND_HTTP", "KIND_SOCKS", "NEXT_CLOSE", "NEXT_REQUEST",
              "WHY_HANDSHAKE_TIMEOUT", "WHY_PROTOCOL")
CORE_METHODS = ("run", "take", "fileno", "add_listener", "remove_listener", "send", "connect", "detach",
                "close", "counts", "sweep", "close_all", "stats")
# feature -> (module names, Engine methods) it needs
FEATURES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "cache": (("FAST_FAILED", "FAST_SOCKS_REQUEST", "FAST_OPEN", "FAST_AUTH"),
              ("fast_enable", "fast_put", "fast_forget", "fast_lease", "fast_take", "fast_services",
               "fast_counts")),
    "splice": ((), ("set_splice",)),  # long tunnels relayed with splice() (csrc/splice.c)
    "cache_cut": ((), ("fast_cut",)),  # a service's cached tunnels ended at once: quota services cached
}

_logged: set[str] = set()


def _once(key: str, level: int, msg: str, *args: Any) -> None:
    if key not in _logged:
        _logged.add(key)
        log.log(level, msg, *args)


def missing(module: Any, names: tuple[str, ...], methods: tuple[str, ...]) -> list[str]:
    """What of ``names`` (module attributes) and ``methods`` (of its Engine) ``module`` lacks."""
    engine = getattr(module, "Engine", None)
    gone = [n for n in names if not hasattr(module, n)]
    return gone + [f"Engine.{m}" for m in methods if not hasattr(engine, m)]


def check(module: Any) -> ModuleType | None:
    """``module`` when it has the whole core, else None (logged once: a stale build)."""
    gone = missing(module, CORE_NAMES, CORE_METHODS)
    if gone:
        _once("stale", logging.WARNING, "the compiled tunnel engine is stale (it lacks %s): not used, the "
              "Python path serves every connection; rebuild it (scripts/install.sh)", ", ".join(gone))
        return None
    return module  # type: ignore[no-any-return]


def load() -> ModuleType | None:
    """The engine module, or None when it is not built (not Linux, no compiler) or stale."""
    try:
        from . import _tunnels  # type: ignore[attr-defined]
    except ModuleNotFoundError:
        return None
    except ImportError as exc:  # built for another Python or an incompatible build: as if not built
        _once("import", logging.WARNING, "the compiled tunnel engine does not load (%s): not used", exc)
        return None
    return check(_tunnels)


def has(module: Any, feature: str) -> bool:
    """Whether the engine ``module`` has ``feature``; what a stale one lacks is logged once."""
    names, methods = FEATURES[feature]
    gone = missing(module, names, methods)
    if gone:
        _once(f"feature:{feature}", logging.WARNING, "the compiled tunnel engine predates %s (it lacks %s): "
              "off; rebuild it (scripts/install.sh)", feature, ", ".join(gone))
    return not gone
