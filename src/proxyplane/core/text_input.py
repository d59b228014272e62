"""No NUL character in any text a caller sends (issue 19.2).

PostgreSQL cannot store "\\x00" in a text column, SQLite can: the same request would be 201 on one engine
and 500 on the other. `forbid_nul(model)` is applied to every operation's input model when it is registered
(ops.register), so each `str` field (also inside `str | None`, `list[str]` and nested input models) carries
the pattern NUL_FREE: a NUL is a 422 on every door (REST, MCP, legacy, web) before the handler runs, and the
schema each door publishes says so. A field with its own validation pattern keeps it (those patterns admit
no NUL); free-form `dict[str, Any]` values are left to the services (REST still answers a refused NUL as
422 string_nul, adapters/rest/errors.py)."""

from __future__ import annotations

import types
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, StringConstraints

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
