"""System check: CDC_ENCRYPTION_KEY must hold usable Fernet keys (checked by `manage.py check` and at start-up)."""

from __future__ import annotations

from django.core.checks import Error, register
from django.core.exceptions import ImproperlyConfigured

from web.connectors import crypto


@register("connectors")
def encryption_key_check(app_configs, **kwargs):
    try:
        crypto.fernet()
    except ImproperlyConfigured as error:
        return [Error(str(error), id="connectors.E001")]
    return []
