"""The legacy account API's routes under /api (hand-written: paths, bodies and error texts are fixed by
the legacy document). Each route: authenticate (400/401 text bodies), run one registered operation
(domains/legacy/, served by this door only) through `ops.invoke`, render the exact bytes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from proxyplane.adapters.legacy.auth import authenticate
from proxyplane.adapters.legacy.render import LegacyError, error, fail, json_response, text_response
from proxyplane.core.errors import DomainError
from proxyplane.core.text_input import parse_json
from proxyplane.domains.legacy import billing, handlers, lists, service_put, sticky
from proxyplane.domains.legacy.wire import UNPROCESSABLE, Money, Refused
from proxyplane.operations import REGISTRY
from proxyplane.ops import Caller, Operation, invoke
from proxyplane.platform import Platform

Endpoint = Callable[[Request, Caller], Awaitable[Response]]
# (method, path) -> the registered operation the route runs: the door's table (docs/architecture.md)
ROUTES: dict[tuple[str, str], Operation] = {}
_ROUTE_OP: ContextVar[Operation | None] = ContextVar("legacy_route_op", default=None)
CSV_TYPE = "text/csv; charset=UTF-8"


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        data = parse_json(raw)  # too deep or a number too long: refused like any malformed body
    except ValueError:
        raise fail() from None
    if not isinstance(data, dict):
        raise fail()
    return data


def legacy_router(platform: Platform) -> APIRouter:
    router = APIRouter(prefix="/api", include_in_schema=False)

    def route(path: str, op: Operation, method: str = "GET") -> Callable[[Endpoint], Endpoint]:
        """`op`: the registered operation this route runs (served by the legacy door)."""
        if not op.serves("legacy"):
            raise ValueError(f"{op.name} is not served by the legacy door")
        ROUTES[(method, f"/api{path}")] = op

        def wrap(fn: Endpoint) -> Endpoint:
            async def endpoint(request: Request) -> Response:
                token = _ROUTE_OP.set(op)
                try:
                    caller = await authenticate(platform, request)
                    return await fn(request, caller)
                except LegacyError as exc:
                    return exc.response
                except Refused as exc:
                    return error(exc.message, exc.status, exc.headers)
                except DomainError:
                    return error(UNPROCESSABLE)
                finally:
                    _ROUTE_OP.reset(token)

            router.add_api_route(path, endpoint, methods=[method], name=f"legacy {method} {path}")
            return fn

        return wrap

    async def run(op: Operation, caller: Caller, data: Any) -> Any:
        if op is not _ROUTE_OP.get():
            raise RuntimeError(f"a legacy route ran {op.name}, not the operation it declares")
        return await invoke(platform, op, caller, data)

    def param(request: Request, name: str) -> str:
        return str(request.path_params.get(name, ""))

    @route("/clients", handlers.CLIENTS)
    async def clients(request: Request, caller: Caller) -> Response:
        return json_response(await run(handlers.CLIENTS, caller, handlers.Ref()))

    @route("/billing/credit", REGISTRY["get_balance"])
    async def credit(request: Request, caller: Caller) -> Response:
        balance = await run(REGISTRY["get_balance"], caller, None)
        return json_response({"credit": Money(balance.balance_cents)})

    @route("/billing/invoices", billing.INVOICES)
    async def invoices(request: Request, caller: Caller) -> Response:
        return json_response(await run(billing.INVOICES, caller, billing.InvoiceRef()))

    @route("/billing/invoice/{id}", billing.INVOICE)
    async def invoice(request: Request, caller: Caller) -> Response:
        return json_response(await run(billing.INVOICE, caller, billing.InvoiceRef(id=param(request, "id"))))

    @route("/services", handlers.SERVICES)
    async def services(request: Request, caller: Caller) -> Response:
        return json_response(await run(handlers.SERVICES, caller, handlers.Ref()))

    @route("/service/{id}", handlers.SERVICE)
    async def service(request: Request, caller: Caller) -> Response:
        return json_response(await run(handlers.SERVICE, caller, handlers.Ref(id=param(request, "id"))))

    @route("/service/{id}", service_put.PUT, "PUT")
    async def put_service(request: Request, caller: Caller) -> Response:
        body = await _body(request)
        data = service_put.PutService(
            id=param(request, "id"),
            setip=body.get("setip"),
            update_list=body.get("update_list"),
            password=body.get("password"),
        )
        return json_response(await run(service_put.PUT, caller, data))

    @route("/products", handlers.PRODUCTS)
    async def products(request: Request, caller: Caller) -> Response:
        return json_response(await run(handlers.PRODUCTS, caller, handlers.Ref()))

    @route("/products/orderby/{field}", handlers.PRODUCTS)
    async def products_ordered(request: Request, caller: Caller) -> Response:
        field = param(request, "field")
        if field not in handlers.ORDER_FIELDS:
            return error(UNPROCESSABLE)
        return json_response(await run(handlers.PRODUCTS, caller, handlers.Ref(id=field)))

    @route("/product/{pid}", handlers.PRODUCT)
    async def product(request: Request, caller: Caller) -> Response:
        return json_response(await run(handlers.PRODUCT, caller, handlers.Ref(id=param(request, "pid"))))

    @route("/product/{pid}", handlers.ORDER, "POST")
    async def order_product(request: Request, caller: Caller) -> Response:
        body = await _body(request)
        data = handlers.ProductOrder(
            pid=param(request, "pid"), clientid=body.get("clientid"), setip=body.get("setip")
        )
        return json_response(await run(handlers.ORDER, caller, data))

    @route("/iplist/{typel}/{formatl}/{id}", lists.IPLIST)
    async def iplist(request: Request, caller: Caller) -> Response:
        ref = lists.ListRef(
            id=param(request, "id"), typel=param(request, "typel"), formatl=param(request, "formatl")
        )
        if ref.typel not in lists.TYPES or ref.formatl not in lists.FORMATS:
            return error(UNPROCESSABLE)
        entries = await run(lists.IPLIST, caller, ref)
        if entries is None:
            return error(UNPROCESSABLE)
        if ref.formatl == "json":
            return json_response(lists.as_json(entries))
        if ref.formatl == "csv":
            return text_response(lists.as_csv(entries), media_type=CSV_TYPE)
        return text_response(lists.as_txt(entries))

    @route("/networkstatus/inactive/{id}", lists.INACTIVE)
    async def inactive(request: Request, caller: Caller) -> Response:
        return json_response(await run(lists.INACTIVE, caller, lists.StatusRef(id=param(request, "id"))))

    @route("/networkstatus/errors/{id}", lists.ERRORS)
    async def errors(request: Request, caller: Caller) -> Response:
        return json_response(await run(lists.ERRORS, caller, lists.StatusRef(id=param(request, "id"))))

    @route("/stats/{id}", sticky.STATS)
    async def stats(request: Request, caller: Caller) -> Response:
        return json_response(await run(sticky.STATS, caller, sticky.StickyRef(id=param(request, "id"))))

    @route("/rate/{id}", sticky.RATE)
    async def rate(request: Request, caller: Caller) -> Response:
        return json_response(await run(sticky.RATE, caller, sticky.StickyRef(id=param(request, "id"))))

    @route("/sticky/list/{id}", sticky.LIST)
    async def sticky_list(request: Request, caller: Caller) -> Response:
        return json_response(await run(sticky.LIST, caller, sticky.StickyRef(id=param(request, "id"))))

    @route("/sticky/rotate/{id}/{server}/{session}", sticky.ROTATE)
    async def sticky_rotate(request: Request, caller: Caller) -> Response:
        ref = sticky.StickyRef(
            id=param(request, "id"), server=param(request, "server"), session=param(request, "session")
        )
        return json_response(await run(sticky.ROTATE, caller, ref))

    @route("/sticky/changettl/{id}/{ttl}", sticky.TTL)
    async def sticky_ttl(request: Request, caller: Caller) -> Response:
        ref = sticky.StickyRef(id=param(request, "id"), ttl=param(request, "ttl"))
        result = await run(sticky.TTL, caller, ref)
        return text_response("") if result is None else json_response(result)

    @route("/sticky/resetall/{id}", sticky.RESET)
    async def sticky_reset(request: Request, caller: Caller) -> Response:
        return json_response(await run(sticky.RESET, caller, sticky.StickyRef(id=param(request, "id"))))

    return router
