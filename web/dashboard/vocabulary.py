"""The words a page uses for a connector's source: what one pipeline reads (a MongoDB replica set, a PostgreSQL
database, a MySQL/MariaDB server), what a snapshot reads (collections of documents, tables of rows), and whether
MongoDB-only figures (members, primary elections, change stream, resume tokens) apply."""

from __future__ import annotations

from dataclasses import dataclass

from web.connectors.models import Connector, SourceKind


@dataclass(frozen=True)
class Terms:
    partition: str  # "Replica set"
    partitions: str  # "Replica sets"
    collection: str  # "Collection"
    rows: str  # "Documents"
    mongodb: bool  # replica-set figures, cluster times and resume tokens apply
    names: str = "<db>.<collection>"  # how a snapshot request names what it reads
    example: str = "inventory.orders, inventory.customers"


MONGODB_TERMS = Terms("Replica set", "Replica sets", "Collection", "Documents", True)
TERMS = {
    SourceKind.MONGODB: MONGODB_TERMS,
    # the examples name the demo's tables (devstack/demo_sql.py), which a newcomer can snapshot at once
    SourceKind.POSTGRES: Terms("Database", "Databases", "Table", "Rows", False, "<schema>.<table>",
                               "shop.orders, shop.customers"),
    SourceKind.MYSQL: Terms("Server", "Servers", "Table", "Rows", False, "<database>.<table>",
                            "shop.orders, shop.customers"),
    SourceKind.MARIADB: Terms("Server", "Servers", "Table", "Rows", False, "<database>.<table>",
                              "shop.orders, shop.customers"),
}


def terms_for(connector: Connector) -> Terms:
    return TERMS.get(connector.source, MONGODB_TERMS)
