"""Metered traffic (issue 32): service quotas per period, enforced by the gateway, and bought traffic."""
