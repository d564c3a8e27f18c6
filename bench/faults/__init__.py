"""Fault campaign: exactly-once evidence under crashes, broker stalls, elections and source restarts.

    python -m bench.faults [--source mongodb|postgres|mariadb] [--short] [--runs N] [--scenarios a,b,...]
                           [--freeze 35] [--rate 60] [--seed N] [--json PATH] [--ports LOW-HIGH] [--keep]

Everything runs on a private stack so faults disturb nobody: its own Kafka broker (started with `python -m devstack
up kafka` in a temporary DEVSTACK_HOME, so it can be SIGSTOPped) and its own database: an emulated replica set
(`devstack.mongo.start_replica_set`, so the primary can be stepped down), or a PostgreSQL cluster / MariaDB server
started with `python -m devstack up postgres|mariadb` in a temporary DEVSTACK_HOME (devstack/private_db.py, so it
can be restarted). Each listens on free ports: any, or within --ports LOW-HIGH. The connector is the real runner,
`python -m connectors run cfg.json`, in its own process. An independent writer process (workload.py) runs inserts,
updates, deletes and multi-statement (MongoDB: multi-document) transactions over three tables (collections), each
write with a unique sequence number, from before the snapshot on, at --rate transactions per second. A
read_committed consumer reads the topics while the faults happen; verify.py checks per key (lost, duplicated,
reordered, one tombstone per delete), the transaction metadata and the final topic state against the tables. Once
every write is delivered, the product's Verify (`python -m connectors verify`, product_verify.py) compares the
connector's source with its topics as a second, independent checker (through mongos on a sharded cluster). Per
scenario it prints (report.py): runs, faults, writes checked (streamed changes and
snapshot rows apart), lost, duplicated, reordered, events of no logged write, tombstone / transaction / state errors,
unexpected runner exits, recovery p50 / max (from the end of a fault to the next event a read_committed consumer
receives that it held back), and Verify's rows compared, rows missing in / extra in / different from the topics.

Scenarios (all sources unless named):
  kill-streaming  kill -9 of the runner while it streams, then a restart; the next kill once it streams again
  kill-snapshot   kill -9 of the runner during an initial snapshot of 20,000 seeded rows, then a restart
                  (MongoDB: slowed chunk reads, held while it dies; PostgreSQL/MariaDB: 150,000 rows, 100-row chunks)
  broker-stop     SIGSTOP of the broker for --freeze to --freeze + 10 seconds (the sink gives up after 30 s), then
                  SIGCONT, at a random moment
  broker-stop-commit    the same freeze, exactly as a streaming batch's commit_transaction goes out (the runner is
                        started through `python -m bench.faults runner`, which hooks the sink's producer)
  broker-stop-snapshot  the same freeze as a snapshot chunk's commit goes out
  broker-kill     kill -9 of the broker, then a start
  commit-stall    the broker frozen as a commit goes out for 150-160 s, past the sink's commit deadline (not a
                  default scenario)
  step-down       (mongodb) replSetStepDown of the primary under the write load
  source-restart  (postgres, mariadb) a clean restart of the private server under the write load (PostgreSQL:
                  fast shutdown, as `pg_ctl restart -m fast`; MariaDB: SIGTERM), then a start
  source-crash    (postgres, mariadb) the server dies (PostgreSQL immediate shutdown, MariaDB kill -9), then a start
  source-network  (postgres, mariadb) the connector reaches the server through a TCP fault proxy (netproxy.py):
                  in turn 0.2 s latency for 5-8 s, a 20-25 s blackhole ended by a reset, a reset (RST)
  broker-network  the runner reaches Kafka through the fault proxy, in front of a second listener of the broker
                  that advertises the proxy's port; the same faults in turn

Default scenarios: all but commit-stall for mongodb; kill-streaming, kill-snapshot, broker-stop, broker-kill,
broker-network, source-restart, source-crash, source-network for postgres and mariadb. Exit status 1 when any
error column (Verify's missing / extra / diff included) is not 0, Verify could not compare, a scenario was aborted,
or a runner exited on its own (it is restarted, as a supervisor would, and counted under "unexp exits").
"""

from bench.faults.campaign import MAX_EXITS, Campaign, CampaignAborted, Session
from bench.faults.report import Outcome, report

__all__ = ["MAX_EXITS", "Campaign", "CampaignAborted", "Outcome", "Session", "report"]
