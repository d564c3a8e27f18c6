"""Liveness probe: answers while the process serves requests; no database or broker round trip."""

from django.http import JsonResponse
from django.views.decorators.http import require_safe


@require_safe
def healthz(request):
    return JsonResponse({"status": "ok"})
