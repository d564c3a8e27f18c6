"""Table preview for the connector forms: which of the source's tables (collections) the include/exclude lists
capture, listed by connecting with the configuration's credentials (connectors.config.table_preview, bounded as a
connectivity check). Connecting is an operator's action (web.connectors.connectivity): a viewer gets 403.

The stored password of a connector is sent only to the server it belongs to: drafts.prepare refuses changes that
point it elsewhere without their own password, for a preview as for a save."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.validators import UniqueValidator

from connectors.config.table_preview import PreviewFailed
from web.connectors import connectivity
from web.connectors.api.serializers import ConnectorSerializer

PREVIEW_NAME = "preview"  # for a form whose name is not filled in yet


class PreviewBody(ConnectorSerializer):
    """The create or PATCH body of a connector, made into its parts without connecting. A name already taken is no
    reason to refuse a listing: a form's last preview can arrive just after the form created its connector."""

    def get_fields(self):
        fields = super().get_fields()
        fields["name"].validators = [check for check in fields["name"].validators
                                     if not isinstance(check, UniqueValidator)]
        return fields

    def validate(self, attrs):
        self.prepare_parts(attrs)
        return attrs


PREVIEW_RESPONSES = {
    200: inline_serializer("TablePreview", {
        "tables": serializers.ListField(child=serializers.DictField(), help_text="{name, captured}, by name"),
        "total": serializers.IntegerField(), "captured": serializers.IntegerField()}),
    400: OpenApiResponse(description="Invalid configuration, or a changed server without its password"),
    403: OpenApiResponse(description="Below operator"),
    409: OpenApiResponse(description="Connection checks are turned off (CDC_CONNECTIVITY_CHECK_MS=0)"),
    429: OpenApiResponse(description='{"detail", "retry_after_s"} and a Retry-After header: past the user\'s rate '
                                     "of connection checks, or as many running as allowed"),
    503: OpenApiResponse(description='{"detail": why the tables could not be listed}'),
}


def preview_schema(operation_id: str):
    return extend_schema(
        summary="Preview which tables/collections the include/exclude lists capture (operator; connects to the "
                "source)", operation_id=operation_id, request=ConnectorSerializer, responses=PREVIEW_RESPONSES)


def preview(parts, request) -> tuple[int, dict]:
    """(HTTP status, body) of a preview of `parts`."""
    try:
        return 200, connectivity.list_tables(parts, request)
    except connectivity.Refused as error:
        return 429, {"detail": str(error), "retry_after_s": error.retry_after_s}
    except PreviewFailed as error:
        return 503, {"detail": f"the tables could not be listed: {error}"}
