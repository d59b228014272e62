"""Build the gateway's tunnel engine (C, Linux epoll); everything else is in pyproject.toml.

Elsewhere (or if it does not compile) the gateway runs its pure-Python tunnel path instead."""

import sys

from setuptools import Extension, setup

ext_modules = []
if sys.platform.startswith("linux"):
    csrc = "src/proxyplane/gateway/csrc/"
    ext_modules.append(Extension(
        "proxyplane.gateway._tunnels",
        [csrc + name for name in ("module.c", "actions.c", "conn.c", "handshake.c", "relay.c", "fast.c",
                                  "fast_api.c", "splice.c")],
        depends=[csrc + "tunnels.h"],
        extra_compile_args=["-O2", "-fvisibility=hidden", "-Wall", "-Wextra", "-Wno-unused-parameter",
                            "-Wno-missing-field-initializers"]))

setup(ext_modules=ext_modules)
