"""manage.py connector_pause NAME…: Pause a connector."""

from web.connectors.management.commands._state import StateCommand


class Command(StateCommand):
    help = "Pause a connector."
    state = "paused"
