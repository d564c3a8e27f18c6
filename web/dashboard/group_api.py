"""/api/consumer-groups/ (docs/api.md): list the cluster's consumer groups (viewer); reset a group's offsets on a
topic and delete a group (operator; group_admin), refused while the group has active members."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from web.accounts.roles import OPERATOR
from web.connectors.api.permissions import RolePermission
from web.connectors.api.views import ERROR, source_of
from web.dashboard import group_admin
from web.dashboard.admin_answer import answer

GROUP = OpenApiParameter("group", OpenApiTypes.STR, OpenApiParameter.PATH, description="The consumer group's id.")


class GroupSerializer(serializers.Serializer):
    group = serializers.CharField()
    state = serializers.CharField(help_text="stable, empty, preparing_rebalancing, … as Kafka reports it")
    simple = serializers.BooleanField(help_text="A group that only commits offsets (no membership).")


class GroupListSerializer(serializers.Serializer):
    results = GroupSerializer(many=True)
    more = serializers.IntegerField(help_text="Groups left out beyond the first 1000 by id.")


class ResetSerializer(serializers.Serializer):
    topic = serializers.CharField(max_length=249)
    to = serializers.ChoiceField(choices=group_admin.TARGETS)
    timestamp_ms = serializers.IntegerField(required=False, min_value=0, max_value=10**15,
                                            help_text="With to=timestamp: milliseconds since the epoch.")


class ResetDoneSerializer(serializers.Serializer):
    group = serializers.CharField()
    topic = serializers.CharField()
    offsets = serializers.DictField(child=serializers.IntegerField(), help_text="partition -> new committed offset")



class GroupsView(APIView):
    permission_classes = [RolePermission]

    @extend_schema(summary="The cluster's consumer groups", responses={200: GroupListSerializer, 503: ERROR})
    def get(self, request):
        found, failed = answer(group_admin.all_groups)
        if failed:
            return failed
        groups, more = found
        return Response({"results": GroupSerializer(groups, many=True).data, "more": more})


class GroupView(APIView):
    permission_classes = [RolePermission]
    action_roles = {"DELETE": OPERATOR}

    @extend_schema(summary="Delete a consumer group (operator); 409 while it has active members", parameters=[GROUP],
                   responses={204: None, 403: ERROR, 404: ERROR, 409: ERROR, 503: ERROR})
    def delete(self, request, group: str):
        _, failed = answer(group_admin.delete_group, group, user=request.user, source=source_of(request))
        return failed or Response(status=status.HTTP_204_NO_CONTENT)


class GroupResetView(APIView):
    permission_classes = [RolePermission]
    action_roles = {"POST": OPERATOR}

    @extend_schema(summary="Reset a consumer group's offsets on a topic (operator); 409 while it has active members",
                   parameters=[GROUP], request=ResetSerializer,
                   responses={200: ResetDoneSerializer, 400: ERROR, 403: ERROR, 404: ERROR, 409: ERROR, 503: ERROR})
    def post(self, request, group: str):
        body = ResetSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        offsets, failed = answer(group_admin.reset_offsets, group, data["topic"], data["to"],
                                  data.get("timestamp_ms"), user=request.user, source=source_of(request))
        if failed:
            return failed
        return Response({"group": group, "topic": data["topic"],
                         "offsets": {str(p): o for p, o in sorted(offsets.items())}})
