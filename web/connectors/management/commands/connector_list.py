"""manage.py connector_list: connectors with desired and observed state (--json for scripts)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand

from web.connectors.models import Connector


class Command(BaseCommand):
    help = "List connectors with their desired state and each replica set's observed phase."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args, **options):
        rows = [
            {
                "name": c.name,
                "topic_prefix": c.topic_prefix,
                "desired_state": c.desired_state,
                "replica_sets": {s.replica_set: {"phase": s.phase, "worker": s.worker, "last_error": s.last_error}
                                 for s in c.replica_sets.all()},
            }
            for c in Connector.objects.prefetch_related("replica_sets")
        ]
        if options["json"]:
            self.stdout.write(json.dumps(rows, indent=2))
            return
        if not rows:
            self.stdout.write("no connectors")
        for row in rows:
            observed = ", ".join(f"{rs}={s['phase']}" for rs, s in row["replica_sets"].items()) or "not reported"
            self.stdout.write(f"{row['name']:<30} {row['desired_state']:<8} {row['topic_prefix']:<20} {observed}")
