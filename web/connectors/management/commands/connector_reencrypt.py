"""manage.py connector_reencrypt: re-encrypt every stored secret with the first key of CDC_ENCRYPTION_KEY.

Key rotation: set CDC_ENCRYPTION_KEY=<new>,<old>, run this, then drop <old>.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand
from django.db import transaction

from web.connectors.models import Connector, ConnectorFilter


class Command(BaseCommand):
    help = "Re-encrypt connector secrets with the first key of CDC_ENCRYPTION_KEY (after prepending a new key)."

    @transaction.atomic
    def handle(self, *args, **options):
        connectors = rows = 0
        for connector in Connector.objects.all():
            connector.save(update_fields=["connection_string", "password"])  # decrypted with any key, encrypted anew
            connectors += 1
        for row in ConnectorFilter.objects.exclude(salt=""):
            row.save(update_fields=["salt"])
            rows += 1
        self.stdout.write(f"re-encrypted the secrets of {connectors} connector(s) and {rows} filter row(s)")
