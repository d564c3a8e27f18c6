"""WebSocket consumers of the dashboard. All of them refuse anonymous users during the handshake."""

from __future__ import annotations

import uuid

from channels.generic.websocket import AsyncJsonWebsocketConsumer

# Close code sent (before accepting) to a connection without a logged-in user; browsers see the handshake fail.
UNAUTHENTICATED = 4401


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
