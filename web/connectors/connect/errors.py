"""Kafka Connect's error body: {"error_code": <HTTP status>, "message": "…"}."""

from __future__ import annotations

from rest_framework.exceptions import APIException
from rest_framework.views import exception_handler


class ConnectError(APIException):
    def __init__(self, status_code: int, message: str):
        self.status_code = status_code
        super().__init__(detail=message)


def _message(detail) -> str:
    if isinstance(detail, dict):
        if set(detail) == {"detail"}:
            return _message(detail["detail"])
        return "; ".join(f"{key}: {_message(value)}" for key, value in detail.items())
    if isinstance(detail, list):
        return "; ".join(_message(item) for item in detail)
    return str(detail)


def connect_exception_handler(exc, context):
    response = exception_handler(exc, context)
    if response is not None:
        response.data = {"error_code": response.status_code, "message": _message(response.data)}
    return response
