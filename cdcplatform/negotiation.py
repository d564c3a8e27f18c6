"""Content negotiation: the API writes JSON only, so an Accept header it cannot satisfy (an empty one, `text/html`,
garbage) gets JSON anyway instead of 406 — HTTP lets a server disregard Accept, and clients of Kafka Connect's
REST API that send odd headers still read the answer."""

from __future__ import annotations

from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation


class JsonWhateverTheAccept(DefaultContentNegotiation):
    def select_renderer(self, request, renderers, format_suffix=None):
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except NotAcceptable:
            return renderers[0], renderers[0].media_type
