"""Login required everywhere: anonymous requests are redirected to the login page.

Exempt are the paths in settings.LOGIN_EXEMPT_PATHS (an entry ending in "/" is a prefix, any other entry must
match exactly): the login page, /healthz, static files, and the APIs under /api/ and /connect/. The APIs are
exempt from the *redirect* only: DRF's authentication and its IsAuthenticated default permission still refuse
anonymous callers, with a 401/403 JSON answer a script can understand instead of an HTML login page.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.shortcuts import resolve_url


def is_exempt(path: str, exempt_paths: list[str]) -> bool:
    return any(path == entry or (entry.endswith("/") and path.startswith(entry)) for entry in exempt_paths)


class LoginRequiredMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.user.is_authenticated and not is_exempt(request.path_info, self._exempt_paths()):
            return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
        return self.get_response(request)

    @staticmethod
    def _exempt_paths() -> list[str]:
        login_path = resolve_url(settings.LOGIN_URL)
        return [login_path, *settings.LOGIN_EXEMPT_PATHS]
