"""manage.py connector_start NAME…: Resume (start) a connector: desired state running."""

from web.connectors.management.commands._state import StateCommand


class Command(StateCommand):
    help = "Resume (start) a connector: desired state running."
    state = "running"
