"""The /connect/ surface in the OpenAPI schema (drf-spectacular): Kafka Connect's request and response bodies as
raw schemas, the path and query parameters, and the error body `{"error_code", "message"}`. Applied to the views
of web.connectors.connect.views when web.connectors.connect.urls imports this module."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view

from web.connectors.connect import views

TAG = ["connect"]
STRING = {"type": "string"}
STRINGS = {"type": "array", "items": STRING}
STRING_MAP = {"type": "object", "additionalProperties": STRING}
NULLABLE_STRING = {"type": "string", "nullable": True}

ERROR = {"type": "object", "properties": {"error_code": {"type": "integer"}, "message": STRING},
         "required": ["error_code", "message"]}
SERVER_INFO = {"type": "object", "properties": {"version": STRING, "commit": STRING,
                                                 "kafka_cluster_id": NULLABLE_STRING}}
PLUGINS = {"type": "array", "items": {"type": "object", "properties": {"class": STRING, "type": STRING,
                                                                       "version": STRING}}}
TASK_ID = {"type": "object", "properties": {"connector": STRING, "task": {"type": "integer"}}}
CONNECTOR_INFO = {"type": "object", "properties": {"name": STRING, "config": STRING_MAP,
                                                   "tasks": {"type": "array", "items": TASK_ID}, "type": STRING}}
STATE = {"type": "object", "properties": {"state": STRING, "worker_id": STRING, "trace": STRING}}
TASK_STATE = {"type": "object", "properties": {"id": {"type": "integer"}, "state": STRING, "worker_id": STRING,
                                               "trace": STRING}}
CONNECTOR_STATE = {"type": "object", "properties": {"name": STRING, "connector": STATE,
                                                    "tasks": {"type": "array", "items": TASK_STATE}, "type": STRING}}
TASKS = {"type": "array", "items": {"type": "object", "properties": {"id": TASK_ID, "config": STRING_MAP}}}
CONFIG_KEY = {"type": "object", "properties": {
    "name": STRING, "type": STRING, "required": {"type": "boolean"}, "default_value": NULLABLE_STRING,
    "importance": STRING, "documentation": STRING, "group": STRING, "width": STRING, "display_name": STRING,
    "dependents": STRINGS, "order": {"type": "integer"}}}
CONFIG_VALUE = {"type": "object", "properties": {
    "name": STRING, "value": NULLABLE_STRING, "recommended_values": STRINGS, "errors": STRINGS,
    "visible": {"type": "boolean"}}}
CONFIG_INFOS = {"type": "object", "properties": {
    "name": STRING, "error_count": {"type": "integer"}, "groups": STRINGS,
    "configs": {"type": "array", "items": {"type": "object", "properties": {"definition": CONFIG_KEY,
                                                                           "value": CONFIG_VALUE}}}}}
OFFSET_ENTRY = {"type": "object", "properties": {
    "partition": {"type": "object", "properties": {"rs": STRING}, "required": ["rs"]},
    "offset": {"type": "object", "nullable": True, "additionalProperties": True}}, "required": ["partition"]}
OFFSETS = {"type": "object", "properties": {"offsets": {"type": "array", "items": OFFSET_ENTRY}}}
MESSAGE = {"type": "object", "properties": {"message": STRING}}
ACTIVE_TOPICS = {"type": "object", "additionalProperties": {"type": "object", "properties": {"topics": STRINGS}}}
LOGGER_LEVEL = {"type": "object", "properties": {"level": STRING,
                                                 "last_modified": {"type": "integer", "nullable": True}}}
LOGGERS = {"type": "object", "additionalProperties": LOGGER_LEVEL}
NEW_CONNECTOR = {"type": "object", "properties": {
    "name": STRING, "config": STRING_MAP,
    "initial_state": {"type": "string", "enum": ["RUNNING", "PAUSED", "STOPPED"]}}, "required": ["name", "config"]}
SET_LEVEL = {"type": "object", "properties": {
    "level": {"type": "string", "enum": ["OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE"]}},
    "required": ["level"]}

NAME = OpenApiParameter("name", OpenApiTypes.STR, OpenApiParameter.PATH, description="The connector's name")
TASK = OpenApiParameter("task", OpenApiTypes.INT, OpenApiParameter.PATH,
                        description="Task id: the connector's replica sets in name order, from 0")
PLUGIN = OpenApiParameter("plugin", OpenApiTypes.STR, OpenApiParameter.PATH,
                          description="Connector class (full or short name)")
LOGGER = OpenApiParameter("logger", OpenApiTypes.STR, OpenApiParameter.PATH,
                          description="Logger name (`root` for the root logger)")
EXPAND = OpenApiParameter("expand", OpenApiTypes.STR, many=True, enum=["status", "info"],
                          description="Add each connector's status and/or info")
INCLUDE_TASKS = OpenApiParameter("includeTasks", OpenApiTypes.BOOL, description="Restart the tasks too")
ONLY_FAILED = OpenApiParameter("onlyFailed", OpenApiTypes.BOOL, description="Restart only failed instances")
SCOPE = OpenApiParameter("scope", OpenApiTypes.STR, enum=["worker", "cluster"],
                         description="worker: this process (200); cluster: every worker too (204)")


def errors(*codes: int) -> dict:
    return {code: OpenApiResponse(ERROR, description="Kafka Connect's error body") for code in codes}


def op(operation_id: str, summary: str, responses: dict, *, parameters=(), request=None, errors_at=()) -> dict:
    body = {"application/json": request} if request is not None else None
    return extend_schema(operation_id=operation_id, summary=summary, tags=TAG, parameters=list(parameters),
                         request=body, responses={**responses, **errors(*errors_at)})


def empty(description: str) -> OpenApiResponse:
    return OpenApiResponse(description=description)


extend_schema_view(get=op("connect_server_info", "Worker version, commit and the Kafka cluster id",
                          {200: SERVER_INFO}))(views.RootView)
extend_schema_view(get=op("connect_plugins_list", "Installed connector plugins", {200: PLUGINS}))(views.PluginsView)
extend_schema_view(put=op("connect_plugin_config_validate", "Validate a configuration: every property with its "
                          "metadata, value and errors (ConfigInfos)", {200: CONFIG_INFOS}, parameters=[PLUGIN],
                          request=STRING_MAP, errors_at=(400,)))(views.ValidateView)
extend_schema_view(
    get=op("connect_connectors_list", "Connector names, or {name: {status, info}} with expand",
           {200: OpenApiResponse(OpenApiTypes.ANY, description="names, or a map by name")}, parameters=[EXPAND]),
    post=op("connect_connectors_create", "Create a connector", {201: CONNECTOR_INFO}, request=NEW_CONNECTOR,
            errors_at=(400, 409)),
)(views.ConnectorsView)
extend_schema_view(
    get=op("connect_connector_info", "A connector's info", {200: CONNECTOR_INFO}, parameters=[NAME],
           errors_at=(404,)),
    delete=op("connect_connector_delete", "Delete a connector (offsets stay)", {204: empty("deleted")},
              parameters=[NAME], errors_at=(404,)),
)(views.ConnectorView)
extend_schema_view(
    get=op("connect_connector_config", "A connector's configuration (secrets masked)", {200: STRING_MAP},
           parameters=[NAME], errors_at=(404,)),
    put=op("connect_connector_config_put", "Create or reconfigure a connector",
           {200: CONNECTOR_INFO, 201: CONNECTOR_INFO}, parameters=[NAME], request=STRING_MAP, errors_at=(400, 409)),
)(views.ConfigView)
extend_schema_view(get=op("connect_connector_status", "A connector's and its tasks' states", {200: CONNECTOR_STATE},
                          parameters=[NAME], errors_at=(404,)))(views.StatusView)
extend_schema_view(get=op("connect_connector_tasks", "A connector's tasks (one per replica set)", {200: TASKS},
                          parameters=[NAME], errors_at=(404,)))(views.TasksView)
extend_schema_view(get=op("connect_task_status", "One task's state", {200: TASK_STATE}, parameters=[NAME, TASK],
                          errors_at=(404,)))(views.TaskStatusView)
extend_schema_view(post=op("connect_task_restart", "Restart one task (its replica set's pipeline)",
                           {204: empty("restart requested")}, parameters=[NAME, TASK],
                           errors_at=(404, 409)))(views.TaskRestartView)
extend_schema_view(post=op("connect_connector_restart", "Restart a connector (and its tasks)",
                           {202: CONNECTOR_STATE, 204: empty("restart requested")},
                           parameters=[NAME, INCLUDE_TASKS, ONLY_FAILED], errors_at=(404, 409)))(views.RestartView)
extend_schema_view(put=op("connect_connector_pause", "Pause a connector", {202: empty("accepted")},
                          parameters=[NAME], errors_at=(404, 409)))(views.PauseView)
extend_schema_view(put=op("connect_connector_resume", "Resume a connector", {202: empty("accepted")},
                          parameters=[NAME], errors_at=(404, 409)))(views.ResumeView)
extend_schema_view(put=op("connect_connector_stop", "Stop a connector", {204: empty("stopped")},
                          parameters=[NAME], errors_at=(404, 409)))(views.StopView)
extend_schema_view(
    get=op("connect_connector_offsets", "The connector's offsets (KIP-875)", {200: OFFSETS}, parameters=[NAME],
           errors_at=(404, 503)),
    patch=op("connect_connector_offsets_alter", "Alter offsets of a STOPPED connector", {200: MESSAGE},
             parameters=[NAME], request=OFFSETS, errors_at=(400, 404)),
    delete=op("connect_connector_offsets_reset", "Reset the offsets of a STOPPED connector", {200: MESSAGE},
              parameters=[NAME], errors_at=(400, 404)),
)(views.OffsetsView)
extend_schema_view(get=op("connect_connector_topics", "Topics the connector wrote to since creation or its last "
                          "reset (KIP-558)", {200: ACTIVE_TOPICS}, parameters=[NAME],
                          errors_at=(404, 503)))(views.TopicsView)
extend_schema_view(put=op("connect_connector_topics_reset", "Empty the connector's set of active topics",
                          {202: empty("accepted")}, parameters=[NAME], errors_at=(404,)))(views.TopicsResetView)
extend_schema_view(get=op("connect_loggers_list", "Loggers with a level of their own, and root",
                          {200: LOGGERS}))(views.LoggersView)
extend_schema_view(
    get=op("connect_logger", "A logger's effective level", {200: LOGGER_LEVEL}, parameters=[LOGGER],
           errors_at=(404,)),
    put=op("connect_logger_set", "Set a logger's level (and its descendants')",
           {200: OpenApiResponse(STRINGS, description="the loggers changed"), 204: empty("set cluster-wide")},
           parameters=[LOGGER, SCOPE], request=SET_LEVEL, errors_at=(400, 404)),
)(views.LoggerView)
