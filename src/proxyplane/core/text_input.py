"""No NUL character in any text a caller sends (issue 19.2).

PostgreSQL cannot store "\\x00" in a text column, SQLite can: the same request would be 201 on one engine
and 500 on the other. `forbid_nul(model)` is applied to every operation's input model when it is registered
(ops.register), so each `str` field (also inside `str | None`, `list[str]` and nested input models) carries
the pattern NUL_FREE: a NUL is a 422 on every door (REST, MCP, legacy, web) before the handler runs, and the
schema each door publishes says so. A field with its own validation pattern keeps it (those patterns admit
no NUL); free-form `dict[str, Any]` values are left to the services (REST still answers a refused NUL as
422 string_nul, adapters/rest/errors.py)."""

from __future__ import annotations

import json
import re
import types
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import AfterValidator, BaseModel, GetJsonSchemaHandler, StringConstraints

NUL_FREE_PATTERN = r"^[^\u0000]*$"
NUL_FREE = StringConstraints(pattern=NUL_FREE_PATTERN)


def _has_pattern(metadata: list[Any]) -> bool:
    return any(getattr(m, "pattern", None) for m in metadata)


def _nul_free(annotation: Any) -> Any:
    """The annotation with every bare `str` in it constrained by NUL_FREE (nested models in place)."""
    if annotation is str:
        return Annotated[str, NUL_FREE]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        forbid_nul(annotation)
        return annotation
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is list and len(args) == 1:
        return list[_nul_free(args[0])]  # type: ignore[misc]
    if origin in (Union, types.UnionType):
        return Union[tuple(_nul_free(a) for a in args)]  # noqa: UP007
    return annotation  # Literal, enums, numbers, Annotated with its own rules, dict[str, Any]


def forbid_nul(model: type[BaseModel]) -> None:
    """Constrain every text field of `model` (and of the input models it nests, first) to NUL_FREE and
    rebuild its validator; once per model."""
    if model.__dict__.get("__nul_free__", False):
        return
    model.__nul_free__ = True  # type: ignore[attr-defined]
    for info in model.model_fields.values():
        if not _has_pattern(info.metadata):
            info.annotation = _nul_free(info.annotation)
    model.model_rebuild(force=True)  # also picks up nested models rebuilt above


# --- one-line labels: subjects and names (issue 30.5) --------------------------------------------------
# refused in a subject or a name: C0/C1 controls (a line break, ESC), the bidirectional marks, embeddings,
# overrides and isolates (U+061C, U+200E/F, U+202A-E, U+2066-9: "Trojan Source" reordering), zero-width and
# invisible characters (U+00AD, U+180E, U+200B-D, U+2060-4, U+FEFF). docs/decisions/contract.md
INVISIBLE_CLASS = (
    "\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u202a-\\u202e"
    "\\u2060-\\u2064\\u2066-\\u2069\\ufeff"
)
LABEL_PATTERN = f"^[^{INVISIBLE_CLASS}]*$"
_INVISIBLE = re.compile(f"[{INVISIBLE_CLASS}]")


def _visible_only(value: str) -> str:
    found = _INVISIBLE.search(value)
    if found is not None:
        raise ValueError(
            f"must not contain control, bidirectional or zero-width characters "
            f"(U+{ord(found.group()):04X} at position {found.start()})"
        )
    return value


@dataclass(frozen=True)
class _LabelSchema:
    """States LABEL_PATTERN in the JSON schema (the check itself is `_visible_only`, with its message);
    `pattern` also tells forbid_nul that the field has its own rule (it admits no NUL)."""

    pattern: str = LABEL_PATTERN

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: GetJsonSchemaHandler) -> Any:
        schema = handler(core_schema)
        schema["pattern"] = self.pattern
        return schema


Label = Annotated[str, AfterValidator(_visible_only), _LabelSchema()]
"""A one-line subject or name a caller sends: `subject: Label = Field(max_length=200)`."""


# --- JSON bodies: nesting depth and number length, before any parser (issue 30.5) -----------------------
MAX_JSON_DEPTH = 32  # no input model nests deeper than a few levels
MAX_NUMBER_CHARS = 40  # every number an input takes is within 2**63 (19 digits); floats need no more
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_LONG_NUMBER = re.compile(rb"[-+0-9.eE]{%d,}" % (MAX_NUMBER_CHARS + 1))
_BRACKETS = re.compile(rb"[\[\]{}]")


class JsonRefused(ValueError):
    """A JSON text refused before it is parsed: `kind` is the error type (json_too_deep, number_too_long)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def check_json(raw: bytes) -> None:
    """Raise JsonRefused when `raw` nests arrays/objects deeper than MAX_JSON_DEPTH or holds a number
    longer than MAX_NUMBER_CHARS characters (a 100,000-deep array exhausts the parser's recursion, a
    5,000-digit integer its int conversion limit). Cheap on ordinary bodies: two byte counts and one
    regex search; the strings are only stripped when a suspect is found."""
    suspect_depth = raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH
    suspect_number = _LONG_NUMBER.search(raw) is not None
    if not (suspect_depth or suspect_number):
        return
    text = _STRING.sub(b'""', raw)  # brackets and digits inside strings do not count
    if suspect_number and _LONG_NUMBER.search(text) is not None:
        raise JsonRefused(
            "number_too_long", f"a number in the JSON body is longer than {MAX_NUMBER_CHARS} characters"
        )
    if suspect_depth:
        depth = deepest = 0
        for bracket in _BRACKETS.findall(text):
            depth += 1 if bracket in (b"[", b"{") else -1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_JSON_DEPTH:
                    raise JsonRefused(
                        "json_too_deep", f"the JSON body nests deeper than {MAX_JSON_DEPTH} levels"
                    )


def parse_json(raw: bytes | str) -> Any:
    """`json.loads` after check_json: JsonRefused for a body too deep or a number too long, ValueError
    (json.JSONDecodeError, UnicodeDecodeError) for one that is not JSON."""
    check_json(raw.encode() if isinstance(raw, str) else raw)
    try:
        return json.loads(raw)
    except RecursionError:  # within the limits above this cannot happen; never a 500 if it does
        raise JsonRefused("json_too_deep", "the JSON body nests too deep") from None
