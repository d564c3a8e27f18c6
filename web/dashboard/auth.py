"""Who is asking for /metrics: Prometheus sends an API token (`Authorization: Bearer <token>`, DRF's `Token <token>`
works too); a person's browser sends its session."""

from __future__ import annotations

from web.accounts.tokens import user_of


def token_user(header: str):
    scheme, _, key = (header or "").strip().partition(" ")
    if scheme.lower() not in ("bearer", "token") or not key.strip():
        return None
    return user_of(key)


def metrics_user(request):
    header = request.headers.get("Authorization", "")
    if header:
        return token_user(header)  # a wrong token is refused even when a session comes along
    user = getattr(request, "user", None)
    return user if user is not None and user.is_authenticated else None
