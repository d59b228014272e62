"""Geo data of exit IPs and prefixes (issue 36): databases in the MaxMind DB format, per geo source."""
