"""/static/ served by the ASGI application itself (settings.SERVE_STATIC), with a plain 404 for anything it cannot
serve: a missing file, or a path that tries to leave the static directories (`..%2f…`). Django's own handler
answers those with its technical 404 page under DEBUG and a 500 for the second; both are visible to anonymous
users, as /static/ sits in front of every middleware."""

from __future__ import annotations

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpResponseNotFound


class PlainStaticFiles(ASGIStaticFilesHandler):
    def serve(self, request):
        try:
            return super().serve(request)
        except (Http404, SuspiciousOperation):
            return HttpResponseNotFound("Not found.\n", content_type="text/plain; charset=utf-8")
