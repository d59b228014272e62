"""The email rule (issue 30.6 / 34): normalise_email refuses what mail headers would read as syntax, and the
schema's pattern (core/bounds.EMAIL) states exactly the rule the service enforces."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proxyplane.core.bounds import EMAIL
from proxyplane.core.errors import ValidationFailed
from proxyplane.domains.accounts.service import normalise_email

PATTERN = re.compile(EMAIL["pattern"])


def accepted(text: str) -> bool:
    try:
        normalise_email(text)
    except ValidationFailed:
        return False
    return True


@pytest.mark.parametrize("text", ["<>@example.com", "a<b@example.com", '"a"@example.com', "a@ex(a)mple.com",
                                  "a,b@example.com", "a@example.com\x00", "a\tb@example.com", "@example.com",
                                  "a@localhost", "a b@example.com"])
def test_refused(text: str) -> None:
    assert not accepted(text) and not PATTERN.fullmatch(text)


@pytest.mark.parametrize("text", ["a@example.com", "  First.Last+tag@Example.COM ", "x@sub.example.co.uk"])
def test_accepted(text: str) -> None:
    assert accepted(text) and PATTERN.fullmatch(text)


@given(st.text(alphabet=' \t\n@.aZ+<>"\\,;:()[]\x1c\xa0\u2003', min_size=1, max_size=12))
def test_the_schema_says_what_the_service_does(text: str) -> None:
    assert accepted(text) == bool(PATTERN.fullmatch(text))
