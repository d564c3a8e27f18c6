"""/api/topics/<topic>/messages/ (docs/api.md): produce one message into a topic (operator; topic_produce)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from web.accounts.roles import OPERATOR
from web.connectors.api.permissions import RolePermission
from web.connectors.api.views import ERROR, source_of
from web.dashboard import topic_browser, topic_produce

TOPIC = OpenApiParameter("topic", OpenApiTypes.STR, OpenApiParameter.PATH, description="The topic's name.")


class HeaderSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=255)
    value = serializers.CharField(allow_blank=True, max_length=topic_produce.MAX_HEADER_BYTES, trim_whitespace=False)


class ProduceSerializer(serializers.Serializer):
    key = serializers.CharField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False,
                                help_text="The key as text (UTF-8); null or absent: no key.")
    value = serializers.CharField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False,
                                  help_text="The value as text (UTF-8), e.g. JSON; null or absent: a tombstone.")
    headers = HeaderSerializer(many=True, required=False, max_length=topic_produce.MAX_HEADERS)


class ProducedSerializer(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField()
    offset = serializers.IntegerField()


class ProduceView(APIView):
    permission_classes = [RolePermission]
    action_roles = {"POST": OPERATOR}

    @extend_schema(summary="Produce one message into a topic (operator)", parameters=[TOPIC],
                   request=ProduceSerializer,
                   responses={201: ProducedSerializer, 400: ERROR, 403: ERROR, 404: ERROR, 503: ERROR})
    def post(self, request, topic: str):
        body = ProduceSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        headers = [(header["name"], header["value"]) for header in data.get("headers", [])]
        try:
            done = topic_produce.produce(topic, data.get("key"), data.get("value"), headers, user=request.user,
                                         source=source_of(request))
        except topic_produce.NoSuchTopic as unknown:
            return Response({"detail": str(unknown)}, status=status.HTTP_404_NOT_FOUND)
        except topic_produce.Refused as refused:
            return Response({"detail": str(refused)}, status=status.HTTP_400_BAD_REQUEST)
        except topic_browser.KafkaUnavailable as problem:
            return Response({"detail": f"Kafka did not answer: {problem}"}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        return Response(ProducedSerializer(done).data, status=status.HTTP_201_CREATED)
