"""A Kafka administration call (topic_admin, group_admin, topic_produce) answered as the API answers it: its
result, or its refusal as 404 (no such topic or group), 409 (the topic or group is in use), 400 (refused otherwise)
and Kafka's silence as 503, each with a `detail` sentence."""

from __future__ import annotations

from rest_framework import status
from rest_framework.response import Response

from web.dashboard import group_admin, topic_admin, topic_browser, topic_produce


def answer(call, *args, **kwargs):
    """(the call's result, None), or (None, the error Response)."""
    try:
        return call(*args, **kwargs), None
    except topic_browser.UnknownTopic as unknown:
        return None, Response({"detail": f"There is no topic {unknown} in the Kafka cluster."},
                              status=status.HTTP_404_NOT_FOUND)
    except (group_admin.NoSuchGroup, topic_produce.NoSuchTopic) as missing:
        return None, Response({"detail": str(missing)}, status=status.HTTP_404_NOT_FOUND)
    except (topic_admin.Conflict, group_admin.GroupBusy) as conflict:
        return None, Response({"detail": str(conflict)}, status=status.HTTP_409_CONFLICT)
    except topic_produce.Refused as refused:
        return None, Response({"detail": str(refused)}, status=status.HTTP_400_BAD_REQUEST)
    except topic_browser.KafkaUnavailable as problem:
        return None, Response({"detail": f"Kafka did not answer: {problem}"},
                              status=status.HTTP_503_SERVICE_UNAVAILABLE)
