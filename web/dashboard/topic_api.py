"""/api/topics/ (docs/api.md): create a topic, delete one, read and change its configuration (topic_admin), produce
one message into it (topic_produce). Writes need the operator role."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from web.accounts.roles import OPERATOR
from web.connectors.api.permissions import RolePermission
from web.connectors.api.views import ERROR, source_of
from web.dashboard import topic_admin, topic_browser, topic_produce
from web.dashboard.admin_answer import answer

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
        done, failed = answer(topic_produce.produce, topic, data.get("key"), data.get("value"), headers,
                              user=request.user, source=source_of(request))
        if failed:
            return failed
        return Response(ProducedSerializer(done).data, status=status.HTTP_201_CREATED)


class NewTopicSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=249)
    partitions = serializers.IntegerField(min_value=1, max_value=topic_admin.MAX_PARTITIONS, default=1)
    replication_factor = serializers.IntegerField(min_value=1, max_value=topic_admin.MAX_REPLICATION, default=1)
    config = serializers.DictField(child=serializers.CharField(max_length=1000), required=False,
                                   help_text="Topic properties, e.g. {\"cleanup.policy\": \"compact\"}.")


class ConfigRowSerializer(serializers.Serializer):
    name = serializers.CharField()
    value = serializers.CharField(allow_null=True, help_text="null for a sensitive property (never shown).")
    source = serializers.CharField(help_text="ConfigSource name: DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG, …")
    default = serializers.BooleanField()
    sensitive = serializers.BooleanField()


class ConfigChangeSerializer(serializers.Serializer):
    set = serializers.DictField(child=serializers.CharField(max_length=1000), required=False,
                                help_text="Properties to set on the topic.")
    reset = serializers.ListField(child=serializers.CharField(max_length=100), required=False,
                                  help_text="Properties to take back to their default.")



class TopicsView(APIView):
    permission_classes = [RolePermission]
    action_roles = {"POST": OPERATOR}

    @extend_schema(summary="Create a topic (operator)", request=NewTopicSerializer,
                   responses={201: NewTopicSerializer, 400: ERROR, 403: ERROR, 503: ERROR})
    def post(self, request):
        body = NewTopicSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        _, failed = answer(topic_admin.create_topic, data["name"], data["partitions"], data["replication_factor"],
                            data.get("config", {}), user=request.user, source=source_of(request))
        return failed or Response(NewTopicSerializer(data).data, status=status.HTTP_201_CREATED)


class TopicView(APIView):
    permission_classes = [RolePermission]
    action_roles = {"DELETE": OPERATOR}

    @extend_schema(summary="Delete a topic (operator); 409 while a connector writes to it", parameters=[TOPIC],
                   responses={204: None, 400: ERROR, 403: ERROR, 404: ERROR, 409: ERROR, 503: ERROR})
    def delete(self, request, topic: str):
        _, failed = answer(topic_admin.delete_topic, topic, user=request.user, source=source_of(request))
        return failed or Response(status=status.HTTP_204_NO_CONTENT)


class TopicConfigView(APIView):
    permission_classes = [RolePermission]
    action_roles = {"PATCH": OPERATOR}

    @extend_schema(summary="The topic's configuration, each property with its source", parameters=[TOPIC],
                   responses={200: ConfigRowSerializer(many=True), 404: ERROR, 503: ERROR})
    def get(self, request, topic: str):
        def rows():
            topic_browser.partitions(topic)
            return topic_browser.config(topic)

        found, failed = answer(rows)
        return failed or Response(ConfigRowSerializer(found, many=True).data)

    @extend_schema(summary="Change the topic's configuration (operator)", parameters=[TOPIC],
                   request=ConfigChangeSerializer,
                   responses={200: ConfigRowSerializer(many=True), 400: ERROR, 403: ERROR, 404: ERROR, 503: ERROR})
    def patch(self, request, topic: str):
        body = ConfigChangeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        changes = {**body.validated_data.get("set", {}), **dict.fromkeys(body.validated_data.get("reset", []))}
        found, failed = answer(topic_admin.alter_config, topic, changes, user=request.user, source=source_of(request))
        return failed or Response(ConfigRowSerializer(found, many=True).data)
