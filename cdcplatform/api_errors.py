"""The API's error answers: DRF's, except that a missing object is named for people ("There is no such Spark
job (nothing at /api/spark/jobs/x/).") instead of by its model class ("No JobDefinition matches the given
query.")."""

from __future__ import annotations

from django.http import Http404
from rest_framework.views import exception_handler

from web.dashboard.errors import missing_object_reason


def api_exception_handler(exc, context):
    response = exception_handler(exc, context)
    if response is not None and isinstance(exc, Http404) and exc.args:
        reason = missing_object_reason(str(exc.args[0]), context["request"].path)
        if reason:
            response.data = {"detail": reason}
    return response
