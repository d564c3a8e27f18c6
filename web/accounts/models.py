"""API tokens stored hashed: the database keeps a SHA-256 digest of each key and its first characters (to tell
tokens apart), never the key itself, so a copy of the database (or of db.sqlite3) gives no one API access. The
key is shown once, when it is issued (web/accounts/tokens.py)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the key, hexadecimal.")
    prefix = models.CharField(max_length=8, db_index=True, help_text="The key's first characters.")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "API token"
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.prefix}… of {self.user}"
