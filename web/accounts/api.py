"""Password entry points of the APIs that answer a locked-out user name with 429 (web.accounts.lockout):
`POST /api/auth/token/` and HTTP Basic authentication (used by /connect/)."""

from __future__ import annotations

from drf_spectacular.authentication import BasicScheme
from rest_framework import exceptions
from rest_framework.authentication import BasicAuthentication
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from cdcplatform.parsers import BoundedJSONParser
from web.accounts import tokens
from web.accounts.lockout import raise_if_locked_out


class LockoutBasicAuthentication(BasicAuthentication):
    def authenticate_credentials(self, userid, password, request=None):
        try:
            return super().authenticate_credentials(userid, password, request)
        except exceptions.AuthenticationFailed:
            raise_if_locked_out(request, {"username": userid})
            raise


class LockoutBasicScheme(BasicScheme):
    """The OpenAPI security scheme of LockoutBasicAuthentication: HTTP Basic, as DRF's."""

    target_class = LockoutBasicAuthentication


class TokenView(ObtainAuthToken):
    """`POST /api/auth/token/` with `username` and `password`: a new API token of the user."""

    parser_classes = (FormParser, MultiPartParser, BoundedJSONParser)

    def post(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        try:
            serializer.is_valid(raise_exception=True)
        except exceptions.ValidationError:
            data = request.data if isinstance(request.data, dict) else {}
            raise_if_locked_out(request, {"username": data.get("username")})
            raise
        # Keys are stored hashed, so the existing ones cannot be handed out again: each call issues a new token
        # (earlier ones keep working until an admin deletes them).
        return Response({"token": tokens.issue(serializer.validated_data["user"])})

