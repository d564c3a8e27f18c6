"""The dashboard: server-rendered pages and the WebSocket consumers that feed their live parts."""
