"""The gateway tests' fixtures (loopback origins, echo servers) for the fault tests too."""

from tests.gateway.conftest import origin, tcp_echo

__all__ = ["origin", "tcp_echo"]
