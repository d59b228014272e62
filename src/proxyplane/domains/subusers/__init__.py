"""Sub-users of a service (issue 18): operations, metering of their usage and its events."""
