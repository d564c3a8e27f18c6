"""Strict query parameters for list endpoints: `limit`/`offset` must be whole numbers in range and filters must
name known values, else 400 naming the parameter (DRF's own pagination silently falls back to its defaults)."""

from __future__ import annotations

from collections.abc import Iterable

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination


def whole_number(params, name: str, *, minimum: int, maximum: int | None = None) -> int | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError({name: [f"{raw!r} is not a whole number"]}) from None
    if value < minimum or (maximum is not None and value > maximum):
        bounds = f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"
        raise ValidationError({name: [f"must be {bounds}, not {value}"]})
    return value


class StrictLimitOffsetPagination(LimitOffsetPagination):
    default_limit = 100
    max_limit = 1000

    def get_limit(self, request):
        limit = whole_number(request.query_params, self.limit_query_param, minimum=1, maximum=self.max_limit)
        return self.default_limit if limit is None else limit

    def get_offset(self, request):
        return whole_number(request.query_params, self.offset_query_param, minimum=0) or 0

    def get_schema_operation_parameters(self, view):
        """DRF's parameters with the ranges enforced above, so the OpenAPI document says what a 400 is for."""
        ranges = {self.limit_query_param: {"minimum": 1, "maximum": self.max_limit},
                  self.offset_query_param: {"minimum": 0}}
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"] = {**parameter["schema"], **ranges.get(parameter["name"], {})}
        return parameters


def check_query(params, allowed: dict[str, Iterable[str] | None]) -> None:
    """400 for a parameter not in `allowed` or a value outside its choices (None: any value)."""
    known = {"limit", "offset", "format", *allowed}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValidationError({name: [f"unknown parameter; use {', '.join(sorted(known))}"] for name in unknown})
    for name, choices in allowed.items():
        value = params.get(name)
        if value and choices is not None and value not in choices:
            raise ValidationError({name: [f"{value!r} is not one of {', '.join(choices)}"]})
