"""Domain errors. Each adapter maps them once: REST JSON, MCP is_error results, legacy bodies."""

from typing import Any


class DomainError(Exception):
    code = "error"
    http_status = 400

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra

    def body(self) -> dict[str, Any]:
        return {"error": self.code, "message": self.message, **self.extra}


class Unauthorized(DomainError):
    code = "unauthorized"
    http_status = 401


class MissingScope(DomainError):
    code = "missing_scope"
    http_status = 403


class Forbidden(DomainError):
    code = "forbidden"
    http_status = 403


class KycRequired(DomainError):
    code = "kyc_required"
    http_status = 403


class NotFound(DomainError):
    code = "not_found"
    http_status = 404


class Conflict(DomainError):
    code = "conflict"
    http_status = 409


class PriceChanged(Conflict):
    code = "price_changed"


class IdempotencyConflict(Conflict):
    code = "idempotency_key_reused"


class AlreadyApplied(Conflict):
    """A door's own once-only key (a dashboard form token) that already ran: nothing happened again."""

    code = "already_applied"


class InsufficientBalance(DomainError):
    code = "insufficient_balance"
    http_status = 402


class ValidationFailed(DomainError):
    code = "validation_error"
    http_status = 422


class RateLimited(DomainError):
    code = "rate_limited"
    http_status = 429


def declares(*errors: type[DomainError]) -> dict[str, Any]:
    """`Operation(extra=declares(Conflict))`: the errors an operation answers beyond those its declaration
    implies (key → 401/403, path id → 404, input → 422, money → 402/409); its OpenAPI documents them."""
    return {"errors": errors}
