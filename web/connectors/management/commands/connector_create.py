"""manage.py connector_create FILE: create (or with --update, replace) a connector from a JSON file.

The file is a Kafka Connect request ({"name": …, "config": {…}}) or a bare Debezium property map; the same
validation as the API applies and every problem is printed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from web.connectors import drafts, services
from web.connectors.definitions import masked_config
from web.connectors.management.commands._common import acting_user, add_user_argument
from web.connectors.models import Connector, DesiredState


class Command(BaseCommand):
    help = "Create a connector from a JSON file (Kafka Connect / Debezium style configuration)."

    def add_arguments(self, parser):
        parser.add_argument("file", help="JSON file; '-' reads standard input")
        parser.add_argument("--state", choices=DesiredState.values, default=DesiredState.RUNNING,
                            help="desired state of a new connector (default running)")
        parser.add_argument("--update", action="store_true", help="replace the configuration if the name exists")
        add_user_argument(parser)

    def handle(self, *args, **options):
        config = self._read(options["file"], options.get("stdin") or sys.stdin)
        user = acting_user(options["user"])
        current = Connector.objects.filter(name=config.get("name")).first()
        if current is not None and not options["update"]:
            raise CommandError(f"connector {current.name!r} exists; pass --update to replace its configuration")
        try:
            parts = drafts.prepare(config, current)
        except drafts.InvalidConfiguration as error:
            lines = "\n".join(f"  {p.property or '(configuration)'}: {p.message}" for p in error.problems)
            raise CommandError(f"invalid configuration ({len(error.problems)} problem(s)):\n{lines}") from None
        if current is None:
            connector = services.create_connector(parts, user=user, source="cli", desired_state=options["state"])
            verb = "created"
        else:
            connector = services.update_connector(current, parts, user=user, source="cli")
            verb = "updated"
        self.stdout.write(f"{verb} connector {connector.name} (desired state {connector.desired_state})")
        self.stdout.write(json.dumps(masked_config(connector), indent=2))

    def _read(self, file: str, stdin) -> dict:
        try:
            text = stdin.read() if file == "-" else Path(file).read_text()
            data = json.loads(text)
        except (OSError, ValueError) as error:
            raise CommandError(f"cannot read {file}: {error}") from None
        if not isinstance(data, dict):
            raise CommandError("the file must hold a JSON object")
        if isinstance(data.get("config"), dict):  # Kafka Connect request body
            name = data.get("name") or data["config"].get("name")
            config = dict(data["config"])
            if name and config.get("name", name) != name:
                raise CommandError(f"name {name!r} and config name {config['name']!r} differ")
            config["name"] = name
            return config
        return data
