"""Error answers in the OpenAPI document (a drf-spectacular postprocessing hook): every operation lists the 4xx
statuses the server gives it, so the document describes what the server returns (schemathesis checks it in
tests/integration/control_plane/test_api_schema.py). Bodies: `{"detail": …}` or field errors under /api/,
`{"error_code", "message"}` under /connect/ (not given a schema here; operations that document their own keep it).
"""

from __future__ import annotations

METHODS = {"get", "put", "post", "patch", "delete"}
API_ERROR = {"type": "object", "additionalProperties": True,
             "description": '{"detail": "…"} or {"<field>": ["…"]}'}
CONNECT_ERROR = {"type": "object", "properties": {"error_code": {"type": "integer"}, "message": {"type": "string"}},
                 "required": ["error_code", "message"]}
DESCRIPTIONS = {
    "400": "The request is invalid: the body or a parameter (named in the answer) is malformed or out of range.",
    "401": "No valid credentials.",
    "403": "The user lacks the role the operation needs.",
    "404": "No such object.",
    "409": "The object's state does not allow it now (the answer says why).",
    "429": "Too many failed logins for this user name from this address; try again later.",
}
TOKEN_PATH = "/api/auth/token/"  # noqa: S105 - a path, not a secret


def statuses_of(path: str, method: str, operation: dict) -> list[str]:
    if path == TOKEN_PATH:
        return ["400", "429"]
    wanted = ["401", "403"]
    if operation.get("requestBody") or operation.get("parameters") or method in ("post", "put", "patch"):
        wanted.append("400")
    if "{" in path:
        wanted.append("404")
    if method != "get":
        wanted.append("409")
    if path.startswith("/connect"):
        wanted.append("429")  # HTTP Basic takes a password: a locked-out user name gets 429
    return wanted


def document_error_answers(result, generator, request, public):
    for path, item in result.get("paths", {}).items():
        for method, operation in item.items():
            if method not in METHODS:
                continue
            responses = operation.setdefault("responses", {})
            body = CONNECT_ERROR if path.startswith("/connect") else API_ERROR
            for status in statuses_of(path, method, operation):
                responses.setdefault(status, {"description": DESCRIPTIONS[status],
                                              "content": {"application/json": {"schema": body}}})
    return result
