"""Base of connector_start / connector_stop / connector_pause: record the desired state, audit, notify."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from web.connectors import services
from web.connectors.management.commands._common import acting_user, add_user_argument, connector_named


class StateCommand(BaseCommand):
    state = "running"

    def add_arguments(self, parser):
        parser.add_argument("names", nargs="+", metavar="NAME")
        add_user_argument(parser)

    def handle(self, *args, **options):
        user = acting_user(options["user"])
        for name in options["names"]:
            connector = services.request_state(connector_named(name), self.state, user=user, source="cli")
            self.stdout.write(f"{connector.name}: desired state {connector.desired_state}")
