"""WebSocket consumers of the dashboard. All of them refuse anonymous users during the handshake."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

# Close code sent (before accepting) to a connection without a logged-in user; browsers see the handshake fail.
UNAUTHENTICATED = 4401
# Close code sent (before accepting) to a logged-in user without the viewer role.
FORBIDDEN = 4403


class AuthenticatedJsonConsumer(AsyncJsonWebsocketConsumer):
    """Accepts only logged-in users (the session cookie, read by AuthMiddlewareStack)."""

    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=UNAUTHENTICATED)
            return
        await self.accept()


class PingConsumer(AuthenticatedJsonConsumer):
    """`/ws/ping/`: echoes each JSON message as `{"pong": <message>, "user": <username>}`.

    The echo goes through the channel layer (group_add, group_send, then the group message delivered back to
    this consumer), so a reply proves that channels-redis carries messages, the same path live metrics take.
    """

    group_name: str | None = None

    async def connect(self):
        await super().connect()
        if self.scope["user"].is_authenticated:
            self.group_name = f"ping.{uuid.uuid4().hex}"  # one group per connection
            await self.channel_layer.group_add(self.group_name, self.channel_name)

    async def receive_json(self, content, **kwargs):
        await self.channel_layer.group_send(self.group_name, {"type": "ping.echo", "payload": content})

    async def ping_echo(self, event):
        await self.send_json({"pong": event["payload"], "user": self.scope["user"].get_username()})

    async def disconnect(self, code):
        if self.group_name:
            await self.channel_layer.group_discard(self.group_name, self.channel_name)


class MetricsConsumer(AsyncJsonWebsocketConsumer):
    """`/ws/metrics/` (`?connector=<name>` for one connector): the dashboard's live feed. Needs the viewer role.

    Sends, as JSON objects with a `type`:
    - `hello` once: `{user, states: [report…]}`, every stored report (ReplicaSetState.metrics plus `phase`, `stale`,
      `last_error`), so a page that reconnects catches up at once;
    - `metrics` for each report a worker publishes to the Channels group `metrics` (once a second per pipeline):
      `{state: {connector, replica_set, worker, final, metrics, sink, snapshot}}`;
    - `connectors` whenever desired states or observed phases change (checked every POLL_SECONDS):
      `{connectors: {name: {desired_state, status, replica_sets: {rs: {phase, stale, last_error}}}}}`.
    """

    POLL_SECONDS = 2.0
    connector: str | None = None
    poller: asyncio.Task | None = None
    joined = False

    async def connect(self):
        from web.dashboard.feed import can_view

        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=UNAUTHENTICATED)
            return
        if not await database_sync_to_async(can_view)(user):
            await self.close(code=FORBIDDEN)
            return
        query = parse_qs(self.scope.get("query_string", b"").decode())
        self.connector = (query.get("connector") or [None])[0] or None
        await self.accept()
        from workers.publish import METRICS_GROUP

        await self.channel_layer.group_add(METRICS_GROUP, self.channel_name)
        self.joined = True
        self.poller = asyncio.create_task(self._poll())

    async def _poll(self):
        from web.dashboard.feed import connectors_summary, stored_states

        states = await database_sync_to_async(stored_states)(self.connector)
        await self.send_json({"type": "hello", "user": self.scope["user"].get_username(), "states": states})
        last, polls = None, 0
        while True:
            summary = await database_sync_to_async(connectors_summary)(self.connector)
            if summary != last or polls % 5 == 0:  # now and then unchanged too: pages may have guessed ahead
                await self.send_json({"type": "connectors", "connectors": summary})
                last = summary
            polls += 1
            await asyncio.sleep(self.POLL_SECONDS)

    async def metrics_update(self, event):
        state = event.get("state") or {}
        if self.connector is None or state.get("connector") == self.connector:
            await self.send_json({"type": "metrics", "state": state})

    async def disconnect(self, code):
        if self.poller is not None:
            self.poller.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.poller
        if self.joined:
            from workers.publish import METRICS_GROUP

            await self.channel_layer.group_discard(METRICS_GROUP, self.channel_name)
