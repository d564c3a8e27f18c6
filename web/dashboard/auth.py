"""Who is asking for /metrics: Prometheus sends an API token (`Authorization: Bearer <token>`, DRF's `Token <token>`
works too); a person's browser sends its session."""

from __future__ import annotations

from rest_framework.authtoken.models import Token


def token_user(header: str):
    scheme, _, key = (header or "").strip().partition(" ")
    if scheme.lower() not in ("bearer", "token") or not key.strip():
        return None
    token = Token.objects.select_related("user").filter(key=key.strip()).first()
    if token is None or not token.user.is_active:
        return None
    return token.user


def metrics_user(request):
    header = request.headers.get("Authorization", "")
    if header:
        return token_user(header)  # a wrong token is refused even when a session comes along
    user = getattr(request, "user", None)
    return user if user is not None and user.is_authenticated else None
