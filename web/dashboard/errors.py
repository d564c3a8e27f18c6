"""Error answers people and scripts can use, with DEBUG on or off: under /connect/ Kafka Connect's
{"error_code", "message"}, under /api/ DRF's {"detail"}, elsewhere a page in the site's layout saying what went
wrong and how to go on. Never a stack trace: an unexpected exception is logged with its traceback and answered
with a 500 page naming only the request it failed on.

`ErrorPages` (middleware) applies this to exceptions raised by views and to 403/404 answers rendered without a
reason (URLs that match nothing, Django's own refusals); the handler404/403/500/400 views in cdcplatform.urls do
it for what reaches Django's handlers; `csrf_failure` replaces the bare "403 Forbidden" of a failed CSRF check.
"""

from __future__ import annotations

import logging
import re

from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.urls import reverse

log = logging.getLogger(__name__)

TITLES = {400: "Bad request", 403: "Not allowed", 404: "Not found", 500: "Something went wrong"}


def _default_reason(request, status: int) -> str:
    if status == 404:
        return f"There is no page at {request.path}."
    if status == 403:
        return "Your role does not allow this."
    if status == 400:
        return "The request could not be understood."
    return f"The server failed while answering {request.method} {request.path}; the details are in its log."


# get_object_or_404's message names a model class ("No JobRun matches the given query."): not for people
NO_OBJECT = re.compile(r"^No (\w+) matches the given query\.$")
PEOPLE_NAMES = {"JobDefinition": "Spark job", "JobRun": "Spark run"}  # else the class name in words


def missing_object_reason(message: str, path: str | None = None) -> str:
    """What get_object_or_404's `message` means for people ("There is no such Spark job (nothing at <path>)."), or
    "" for another message."""
    missing = NO_OBJECT.match(message)
    if not missing:
        return ""
    model = missing.group(1)
    thing = PEOPLE_NAMES.get(model) or re.sub(r"(?<!^)(?=[A-Z])", " ", model).lower()
    return f"There is no such {thing}" + (f" (nothing at {path})." if path is not None else ".")


def _reason_of(exception, request=None) -> str:
    if exception is None or not exception.args:
        return ""
    reason = exception.args[0]
    if isinstance(reason, dict):  # Resolver404's {"path", "tried"}: not for people
        return ""
    return missing_object_reason(str(reason), request.path if request is not None else None) or str(reason)


def error_response(request, status: int, reason: str = "") -> HttpResponse:
    reason = reason or _default_reason(request, status)
    path = request.path
    if path.startswith("/connect/"):
        response = JsonResponse({"error_code": status, "message": reason}, status=status)
    elif path.startswith("/api/"):
        response = JsonResponse({"detail": reason}, status=status)
    else:
        user = getattr(request, "user", None)
        back = request.META.get("HTTP_REFERER") or ""
        if not back.startswith(("http://", "https://")) or back.endswith(path):
            back = ""
        html = render_to_string("dashboard/error.html", {
            "status": status, "title": TITLES.get(status, "Error"), "reason": reason, "back": back,
            "home": reverse("home"), "signed_in": bool(user and user.is_authenticated),
        }, request=request)
        response = HttpResponse(html, status=status)
    response.cdc_error_page = True
    return response


def page_not_found(request, exception=None):
    return error_response(request, 404, _reason_of(exception, request))


def permission_denied(request, exception=None):
    return error_response(request, 403, _reason_of(exception))


def bad_request(request, exception=None):
    return error_response(request, 400, _reason_of(exception) if isinstance(exception, BadRequest) else "")


def server_error(request):
    return error_response(request, 500)


def csrf_failure(request, reason=""):
    return error_response(request, 403, "The form was out of date or sent from another site (CSRF check failed: "
                                         f"{reason}). Reload the page and try again.")


class ErrorPages:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.status_code in (403, 404) and not getattr(response, "cdc_error_page", False) \
                and response.get("Content-Type", "").startswith("text/html") and not _is_admin(request):
            return error_response(request, response.status_code)
        return response

    def process_exception(self, request, exception):
        if isinstance(exception, Http404):
            return error_response(request, 404, _reason_of(exception, request))
        if isinstance(exception, PermissionDenied):
            return error_response(request, 403, _reason_of(exception))
        if isinstance(exception, BadRequest | SuspiciousOperation):
            return error_response(request, 400, _reason_of(exception) if isinstance(exception, BadRequest) else "")
        log.exception("%s %s failed", request.method, request.path)
        return error_response(request, 500)


def _is_admin(request) -> bool:
    return request.path.startswith("/admin/")  # the admin site renders its own pages
