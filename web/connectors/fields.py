"""EncryptedTextField: a text column stored as a Fernet token, plain text in Python."""

from __future__ import annotations

from django.db import models

from web.connectors import crypto


class EncryptedTextField(models.TextField):
    description = "Text encrypted at rest with CDC_ENCRYPTION_KEY"

    def from_db_value(self, value, expression, connection):
        if not value:
            return value
        return crypto.decrypt(value)

    def to_python(self, value):
        # Fixtures written by dumpdata hold the token (value_to_string); decrypt it back.
        if isinstance(value, str) and value and crypto.looks_encrypted(value):
            try:
                return crypto.decrypt(value)
            except crypto.DecryptionError:
                return value
        return value

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if not value:
            return value
        return crypto.encrypt(value)

    def value_to_string(self, obj):
        # dumpdata must never write the clear text.
        value = self.value_from_object(obj)
        return crypto.encrypt(value) if value else value
