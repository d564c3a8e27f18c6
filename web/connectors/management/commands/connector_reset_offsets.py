"""manage.py connector_reset_offsets NAME --to MODE: write an offset reset the pipeline obeys at its next start."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from web.connectors import offsets as offset_views
from web.connectors import services
from web.connectors.management.commands._common import acting_user, add_user_argument, connector_named


class Command(BaseCommand):
    help = ("Reset a connector's offsets: --to latest | timestamp (--timestamp) | token (--token) | snapshot | "
            "initial. Refused while the pipeline runs unless --stop.")

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--to", required=True, choices=offset_views.RESET_MODES, dest="mode")
        parser.add_argument("--timestamp", help="ISO-8601 or ms since the epoch (with --to timestamp)")
        parser.add_argument("--token", help='resume token as JSON, e.g. \'{"_data": "82…"}\' (with --to token)')
        parser.add_argument("--replica-set", action="append", dest="replica_sets",
                            help="only this replica set (repeatable; default: every one known)")
        parser.add_argument("--stop", action="store_true", help="stop the running pipeline first")
        add_user_argument(parser)

    def handle(self, *args, **options):
        connector = connector_named(options["name"])
        mode, timestamp, token = options["mode"], None, None
        if mode == "timestamp":
            try:
                timestamp = offset_views.parse_timestamp(options["timestamp"] or "")
            except ValueError as error:
                raise CommandError(f"--timestamp: {error}") from None
        if mode == "token":
            try:
                token = json.loads(options["token"] or "")
            except ValueError:
                token = None
            if not isinstance(token, dict) or not token:
                raise CommandError('--token: give the resume token as a JSON object, e.g. \'{"_data": "82…"}\'')
        try:
            written = services.reset_offsets(
                connector, mode, user=acting_user(options["user"]), source="cli",
                replica_sets=options["replica_sets"], timestamp=timestamp, token=token, stop=options["stop"],
            )
        except services.PipelineRunning as error:
            raise CommandError(error.with_hint("add --stop to have it stopped")) from None
        except services.ServiceError as error:
            raise CommandError(str(error)) from None
        for record in written:
            self.stdout.write(f"{connector.name}/{record.replica_set}: reset ({mode})")
