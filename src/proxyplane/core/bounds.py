"""Bounds of the storage and formats the services check, for input models' Field constraints (issue 19).

Every integer an API caller sends is bounded by the column it reaches (a larger one would fail in the
database: a 5xx); formats the services check with their own messages are documented in the JSON schema
(`json_schema_extra`) so a schema-valid request is never refused as malformed."""

from typing import Any

INT32_MAX = 2**31 - 1  # Integer columns: counts, limits, offsets
INT64_MAX = 2**63 - 1  # BigInteger columns: cents
# cents a caller sends: within BigInteger and exact in a JSON double (JavaScript clients, and a schema
# validator comparing as float cannot take 2**63 + 192 for 2**63 - 1)
CENTS_MAX = 2**53 - 1

IPV4_PATTERN = (
    r"^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$"
)


def documented(**schema: Any) -> dict[str, Any]:
    """`Field(json_schema_extra=documented(enum=[1, 3]))`: a rule the service enforces (with its own
    message), stated in the schema."""
    return schema


IPV4 = documented(pattern=IPV4_PATTERN, maxLength=15)

# an address as accounts.service.normalise_email takes it (surrounding whitespace stripped, no space, a
# local part, a "." after the first "@", none of <>()[]\\,;:" or control characters); the service refuses
# the rest with its own message
_MAILBOX = '[^@ <>()\\[\\]\\\\,;:"\\u0000-\\u001f\\u007f]'
_HOST = '[^ <>()\\[\\]\\\\,;:"\\u0000-\\u001f\\u007f]'
_FIRST = _MAILBOX.replace("[^@", "[^@\\s", 1)  # what strip() would take is no part of the address
EMAIL = documented(pattern=f"^\\s*{_FIRST}{_MAILBOX}*@{_HOST}*\\.{_HOST}*\\s*$")
