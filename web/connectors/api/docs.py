"""The API's browsable documentation (Swagger UI, Redoc) is served from drf-spectacular-sidecar's files; this
policy makes the browser refuse anything from another host, so the pages work offline and leak nothing."""

from __future__ import annotations

from functools import wraps

POLICY = ("default-src 'self'; img-src 'self' data:; font-src 'self' data:; style-src 'self' 'unsafe-inline'; "
          "script-src 'self' 'unsafe-inline'; worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'self'")


def local_only(view):
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        response["Content-Security-Policy"] = POLICY
        return response

    return wrapped
