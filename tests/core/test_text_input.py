"""Issue 30.5: JSON bodies too deep or with numbers too long are refused before any parser; one-line
labels (subjects, names) refuse control, bidirectional and zero-width characters."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field, ValidationError

from proxyplane.core.text_input import (
    LABEL_PATTERN,
    MAX_JSON_DEPTH,
    JsonRefused,
    Label,
    check_json,
    forbid_nul,
    parse_json,
)


def test_deep_nesting_is_refused_without_recursion() -> None:
    with pytest.raises(JsonRefused) as caught:
        parse_json("[" * 100_000 + "]" * 100_000)
    assert caught.value.kind == "json_too_deep"
    deep_object = '{"a":' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(JsonRefused):
        check_json(deep_object.encode())


def test_depth_at_the_limit_and_brackets_in_strings_pass() -> None:
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert parse_json(at_limit) is not None
    many_flat = "[" + ",".join("{}" for _ in range(500)) + "]"  # many objects, depth 2
    assert len(parse_json(many_flat)) == 500
    in_string = '{"subject": "' + "[" * 1000 + '"}'
    assert parse_json(in_string) == {"subject": "[" * 1000}


def test_long_numbers_are_refused_long_digit_strings_pass() -> None:
    with pytest.raises(JsonRefused) as caught:
        parse_json('{"limit": ' + "9" * 5000 + "}")
    assert caught.value.kind == "number_too_long"
    assert parse_json('{"limit": 9223372036854775807}') == {"limit": 2**63 - 1}
    assert parse_json('{"token": "' + "9" * 5000 + '"}') == {"token": "9" * 5000}
    assert parse_json('{"token": "a\\"' + "9" * 100 + '"}') == {"token": 'a"' + "9" * 100}


class Named(BaseModel):
    name: Label = Field(max_length=50)
    note: Label | None = None


forbid_nul(Named)


@pytest.mark.parametrize(
    "bad",
    [
        "invoice\u202egnp.exe",
        "a\u200bb",
        "a\u2066b\u2069",
        "\ufeffname",
        "line\nbreak",
        "esc\x1b[31m",
        "nul\x00",
    ],
)
def test_labels_refuse_invisible_characters_naming_the_field(bad: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Named(name=bad)
    error = caught.value.errors()[0]
    assert error["loc"] == ("name",)
    assert "bidirectional or zero-width" in error["msg"] and "U+" in error["msg"]
    with pytest.raises(ValidationError):
        Named(name="ok", note=bad)


def test_labels_keep_ordinary_text_and_state_the_pattern() -> None:
    for good in ["Main office", "Ünïcødé ✓", "שלום עולם", "مرحبا", "日本語", "emoji 👍"]:
        assert Named(name=good).name == good
    schema = Named.model_json_schema()
    assert schema["properties"]["name"]["pattern"] == LABEL_PATTERN
    assert schema["properties"]["name"]["maxLength"] == 50
    assert schema["properties"]["note"]["anyOf"][0]["pattern"] == LABEL_PATTERN


def test_the_dashboard_sign_up_name_is_a_label() -> None:
    from proxyplane.domains.accounts.web_ops import SignUp

    with pytest.raises(ValidationError) as caught:
        SignUp(email="a@example.com", name="Ana\u202e", password="correct horse battery")
    assert caught.value.errors()[0]["loc"] == ("name",)
    assert SignUp(email="a@example.com", name="Ana", password="correct horse battery").name == "Ana"
