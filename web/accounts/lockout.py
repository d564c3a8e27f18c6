"""Locking out password guessing (django-axes): after LOGIN_FAILURE_LIMIT failed logins for one user name from one
address, that pair is refused for LOGIN_LOCKOUT_MINUTES, on every way in that takes a password — the login page,
the admin's login, `POST /api/auth/token/` and HTTP Basic on /connect/. The answer is a 429 that says how long
the lock lasts and that an admin can lift it (docs/configuration-django.md, "Login lockout").

Axes flags the request it was handed (`request.axes_locked_out`). Django's login views hand it theirs, and
AxesMiddleware then answers with `lockout_response`; DRF hands it its own Request wrapper, which the middleware
never sees, so the DRF entry points check the flag themselves and raise `LockedOut`."""

from __future__ import annotations

import math

from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.http import JsonResponse
from django.shortcuts import render
from django.utils import timezone
from rest_framework import status
from rest_framework.exceptions import APIException


def minutes_left(username: str | None, ip_address: str | None) -> int:
    """Whole minutes until the lock of (username, address) ends, counted from its last failed attempt."""
    from axes.helpers import get_cool_off
    from axes.models import AccessAttempt

    cool_off = get_cool_off()
    if cool_off is None:
        return 0
    last = (AccessAttempt.objects.filter(username=username, ip_address=ip_address)
            .order_by("-attempt_time").values_list("attempt_time", flat=True).first())
    remaining = cool_off if last is None else cool_off - (timezone.now() - last)
    return max(1, math.ceil(remaining.total_seconds() / 60))


def lockout_message(minutes: int) -> str:
    if minutes <= 0:
        return "Too many failed logins for this user name from your address; ask an admin to unlock it."
    unit = "minute" if minutes == 1 else "minutes"
    return (f"Too many failed logins for this user name from your address; try again in {minutes} {unit} "
            "or ask an admin to unlock it.")


def _request_identity(request, credentials) -> tuple[str | None, str | None]:
    from axes.helpers import get_client_ip_address, get_client_username

    return get_client_username(request, credentials), get_client_ip_address(request)


def _retry_after(minutes: int) -> dict[str, str]:
    return {"Retry-After": str(minutes * 60)} if minutes > 0 else {}


def lockout_response(request, original_response=None, credentials=None):
    """AXES_LOCKOUT_CALLABLE: JSON for the APIs (Connect's error shape under /connect/), else the login page."""
    minutes = minutes_left(*_request_identity(request, credentials))
    message = lockout_message(minutes)
    path = request.path_info
    if path.startswith("/connect"):
        return JsonResponse({"error_code": 429, "message": message}, status=429, headers=_retry_after(minutes))
    if path.startswith("/api/"):
        return JsonResponse({"detail": message}, status=429, headers=_retry_after(minutes))
    context = {"form": AuthenticationForm(request), "lockout": message,
               "next": request.POST.get("next") or request.GET.get("next") or settings.LOGIN_REDIRECT_URL}
    page = render(request, "registration/login.html", context, status=429)
    for name, value in _retry_after(minutes).items():
        page[name] = value
    return page


class LockedOut(APIException):
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_code = "locked_out"

    def __init__(self, request, credentials=None):
        minutes = minutes_left(*_request_identity(request, credentials))
        self.wait = minutes * 60 or None  # DRF's exception handler sends it as Retry-After
        super().__init__(lockout_message(minutes))


def raise_if_locked_out(request, credentials=None) -> None:
    """After a failed authenticate(request=<DRF request>): the lockout, if axes declared one."""
    if getattr(request, "axes_locked_out", False):
        raise LockedOut(request, credentials)
