"""manage.py connector_stop NAME…: Stop a connector: its pipelines stop with a final offset commit."""

from web.connectors.management.commands._state import StateCommand


class Command(StateCommand):
    help = "Stop a connector: its pipelines stop with a final offset commit."
    state = "stopped"
