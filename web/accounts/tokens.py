"""Issuing and checking API tokens (`Authorization: Token <key>`; /metrics also takes `Bearer <key>`).

A key is 40 random hexadecimal characters, as DRF's were; only its SHA-256 digest is stored (ApiToken). A token
written in clear into DRF's own table — by `manage.py drf_create_token`, a script using
`rest_framework.authtoken.models.Token`, or before this change (migration 0002 converts those) — is converted at
once: its digest is stored and the clear row deleted, so the key handed out keeps working."""

from __future__ import annotations

import hashlib
import secrets

from django.db import transaction
from django.db.models.signals import post_save
from django.dispatch import receiver
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token as ClearToken

from web.accounts.models import ApiToken


def digest_of(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def store(user, key: str) -> ApiToken:
    return ApiToken.objects.create(user=user, digest=digest_of(key), prefix=key[:8])


def issue(user) -> str:
    """A new token of `user`; the key is returned here and never again."""
    key = secrets.token_hex(20)
    store(user, key)
    return key


def user_of(key: str):
    """The active user a key belongs to, or None."""
    token = ApiToken.objects.select_related("user").filter(digest=digest_of(key.strip())).first()
    if token is None or not token.user.is_active:
        return None
    return token.user


class HashedTokenAuthentication(TokenAuthentication):
    """DRF's `Token <key>` authentication over hashed keys."""

    def authenticate_credentials(self, key):
        user = user_of(key)
        if user is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        return user, None


@receiver(post_save, sender=ClearToken)
def convert_clear_token(sender, instance: ClearToken, created: bool, **kwargs) -> None:
    with transaction.atomic():
        if not ApiToken.objects.filter(digest=digest_of(instance.key)).exists():
            store(instance.user, instance.key)
        ClearToken.objects.filter(pk=instance.pk).delete()
