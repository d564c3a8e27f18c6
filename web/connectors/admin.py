"""Django admin: connectors (validated like the API, saved through services so every change is audited), filter
rows, observed state, snapshot requests, the audit log (read-only), and an offsets page per connector with resets
behind a confirmation step. Roles: viewers see, operators pause/resume/stop, admins change and reset."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.urls import path, reverse
from django.utils.html import format_html

from connectors.secrets import MASK
from web.accounts.roles import ADMIN, OPERATOR, VIEWER, has_role
from web.connectors import drafts, services, validation
from web.connectors import properties as props
from web.connectors.admin_offsets import offsets_view
from web.connectors.api.serializers import FilterSerializer, MaskedConnectionStringField
from web.connectors.definitions import parts_of
from web.connectors.models import (
    AuditEntry,
    Connector,
    ConnectorFilter,
    DesiredState,
    ReplicaSetState,
    SnapshotRequest,
)

_mask = MaskedConnectionStringField().to_representation


class RoleAdmin(admin.ModelAdmin):
    """View needs viewer, add/change/delete need admin (on top of is_staff for the admin site)."""

    def has_module_permission(self, request):
        return has_role(request.user, VIEWER)

    def has_view_permission(self, request, obj=None):
        return has_role(request.user, VIEWER)

    def has_add_permission(self, request):
        return has_role(request.user, ADMIN)

    def has_change_permission(self, request, obj=None):
        return has_role(request.user, ADMIN)

    def has_delete_permission(self, request, obj=None):
        return has_role(request.user, ADMIN)


class ReadOnlyAdmin(RoleAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class ConnectorForm(forms.ModelForm):
    topic_prefix = forms.CharField(required=False)
    connection_string = forms.CharField(
        required=False, widget=forms.TextInput(attrs={"size": 90}),
        help_text="mongodb.connection.string. Shown with the password masked; leave it as shown to keep it.",
    )
    password = forms.CharField(required=False, widget=forms.PasswordInput(render_value=False),
                               help_text="mongodb.password (with mongodb.user), or database.password for "
                               "PostgreSQL and MySQL/MariaDB. Leave blank to keep the stored one.")
    clear_password = forms.BooleanField(required=False, help_text="Remove the stored password.")
    config = forms.JSONField(required=False, initial=dict, widget=forms.Textarea(attrs={"rows": 12, "cols": 90}),
                             help_text="Every other engine option by Debezium property name (docs/configuration.md). "
                                       "Filters are edited as filter rows below.")

    class Meta:
        model = Connector
        fields = ["name", "topic_prefix", "connection_string", "password", "clear_password", "config",
                  "desired_state"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["name"].disabled = True
            self.initial["connection_string"] = _mask(self.instance.connection_string)
            shown = props.mask(props.join(parts_of(self.instance)))
            self.initial["config"] = {key: value for key, value in shown.items() if key not in _TOP_LEVEL
                                      and not props.is_filter_property(key)}

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        config = data.get("config") or {}
        if not isinstance(config, dict):
            self.add_error("config", "give a JSON object of properties")
            return data
        given = {key: value for key, value in config.items() if not props.is_filter_property(key)}
        given.update({props.NAME: data.get("name") or self.instance.name, props.TOPIC_PREFIX: data.get("topic_prefix")})
        if data.get("connection_string"):
            given[props.CONNECTION_STRING] = data["connection_string"]
        stored = parts_of(self.instance) if self.instance.pk else props.Parts()
        password = props.password_property(given if props.CONNECTOR_CLASS in given else stored.properties)
        if data.get("password"):
            given[password] = data["password"]
        elif stored.password and not data.get("clear_password"):
            given[password] = MASK  # kept, if the connector still logs in where it was stored for
        given.update(props.filter_properties(stored.filters))
        try:
            self.parts = drafts.prepare(given, self.instance if self.instance.pk else None)
        except drafts.InvalidConfiguration as error:
            for problem in error.problems:
                field = validation.api_field(problem.property)
                field = field if field in self.fields else "config"
                self.add_error(field, problem.message)
        return data


_TOP_LEVEL = (props.NAME, props.TOPIC_PREFIX, props.CONNECTION_STRING, *props.PASSWORDS)


class FilterInline(admin.TabularInline):
    model = ConnectorFilter
    fields = ["kind", "value", "argument", "position", "edit"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def edit(self, row):
        return format_html('<a href="{}">edit</a>', reverse("admin:connectors_connectorfilter_change", args=[row.pk]))

    def has_add_permission(self, request, obj=None):
        return False


class StateInline(admin.TabularInline):
    model = ReplicaSetState
    fields = ["replica_set", "worker", "phase", "since", "heartbeat_at", "last_error"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Connector)
class ConnectorAdmin(RoleAdmin):
    form = ConnectorForm
    list_display = ["name", "topic_prefix", "desired_state", "connection", "updated_at", "updated_by", "offsets"]
    list_filter = ["desired_state"]
    search_fields = ["name", "topic_prefix"]
    inlines = [FilterInline, StateInline]
    actions = ["pause", "resume", "stop"]
    readonly_fields = ["created_at", "created_by", "updated_at", "updated_by", "offsets"]

    def get_fields(self, request, obj=None):
        fields = ["name", "topic_prefix", "connection_string", "password", "clear_password", "config",
                  "desired_state"]
        return fields + (self.readonly_fields if obj else [])

    @admin.display(description="connection")
    def connection(self, connector):
        return _mask(connector.connection_string) or connector.properties.get("mongodb.hosts", "")

    @admin.display(description="offsets")
    def offsets(self, connector):
        if not connector.pk:
            return "-"
        return format_html('<a href="{}">position and resets</a>',
                           reverse("admin:connectors_connector_offsets", args=[connector.pk]))

    def get_urls(self):
        extra = [path("<int:object_id>/offsets/", self.admin_site.admin_view(self.offsets_page),
                      name="connectors_connector_offsets")]
        return extra + super().get_urls()

    def offsets_page(self, request, object_id):
        if not self.has_view_permission(request):
            raise PermissionDenied
        return offsets_view(self, request, object_id)

    def save_model(self, request, obj, form, change):
        state = form.cleaned_data.get("desired_state") or DesiredState.RUNNING
        try:
            if change:
                fresh = Connector.objects.get(pk=obj.pk)
                saved = services.update_connector(fresh, form.parts, user=request.user, source="admin",
                                                  desired_state=state)
            else:
                saved = services.create_connector(form.parts, user=request.user, source="admin", desired_state=state)
        except services.ServiceError as error:
            raise PermissionDenied(str(error)) from None
        obj.pk, obj.name = saved.pk, saved.name
        obj.refresh_from_db()

    def save_related(self, request, form, formsets, change):
        pass  # filter rows are read-only here; they are saved through their own admin

    def get_deleted_objects(self, objs, request):
        """What goes with a connector (observed state, requests, filter rows) is listed but needs no permission of
        its own: those pages are read-only, and deleting the connector is what an admin asked for."""
        deleted, counts, _, protected = super().get_deleted_objects(objs, request)
        return deleted, counts, set(), protected

    def delete_model(self, request, obj):
        services.delete_connector(obj, user=request.user, source="admin")

    def delete_queryset(self, request, queryset):
        for connector in queryset:
            services.delete_connector(connector, user=request.user, source="admin")

    def _set_state(self, request, queryset, state):
        if not has_role(request.user, OPERATOR):
            raise PermissionDenied
        for connector in queryset:
            services.request_state(connector, state, user=request.user, source="admin")
        self.message_user(request, f"{queryset.count()} connector(s): desired state {state}.", messages.SUCCESS)

    @admin.action(description="Pause selected connectors")
    def pause(self, request, queryset):
        self._set_state(request, queryset, DesiredState.PAUSED)

    @admin.action(description="Resume selected connectors")
    def resume(self, request, queryset):
        self._set_state(request, queryset, DesiredState.RUNNING)

    @admin.action(description="Stop selected connectors")
    def stop(self, request, queryset):
        self._set_state(request, queryset, DesiredState.STOPPED)

    def get_actions(self, request):
        actions = super().get_actions(request)
        if not has_role(request.user, OPERATOR):
            for name in ("pause", "resume", "stop"):
                actions.pop(name, None)
        return actions


class FilterForm(forms.ModelForm):
    salt = forms.CharField(required=False, widget=forms.PasswordInput(render_value=False),
                           help_text="Hash masks only: the salt. Leave blank to keep the stored one.")

    class Meta:
        model = ConnectorFilter
        fields = ["connector", "kind", "value", "argument", "salt", "position"]

    def clean(self):
        data = super().clean()
        connector = data.get("connector") or getattr(self.instance, "connector", None)
        if self.errors or connector is None:
            return data
        body = {key: data.get(key) for key in ("kind", "value", "argument", "position")}
        body["argument"] = body["argument"] or ""
        if data.get("salt"):
            body["salt"] = data["salt"]
        checker = FilterSerializer(self.instance if self.instance.pk else None, data=body,
                                   context={"connector": connector})
        if not checker.is_valid():
            for field, errors in checker.errors.items():
                for error in errors:
                    self.add_error(field if field in self.fields else None, str(error))
            return data
        self.validated = dict(checker.validated_data)
        return data


@admin.register(ConnectorFilter)
class ConnectorFilterAdmin(RoleAdmin):
    form = FilterForm
    list_display = ["connector", "kind", "value", "argument", "position"]
    list_filter = ["kind", "connector"]
    search_fields = ["connector__name", "value"]

    def save_model(self, request, obj, form, change):
        row = ConnectorFilter.objects.get(pk=obj.pk) if change else None
        saved = services.save_filter(form.cleaned_data["connector"], row, form.validated, user=request.user,
                                     source="admin")
        obj.pk = saved.pk
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        try:
            services.delete_filter(obj, user=request.user, source="admin")
        except services.ServiceError as error:
            self.message_user(request, f"Not deleted: {error}", messages.ERROR)

    def delete_queryset(self, request, queryset):
        for row in queryset:
            self.delete_model(request, row)


@admin.register(ReplicaSetState)
class ReplicaSetStateAdmin(ReadOnlyAdmin):
    list_display = ["connector", "replica_set", "phase", "worker", "since", "heartbeat_at"]
    list_filter = ["phase"]


@admin.register(SnapshotRequest)
class SnapshotRequestAdmin(ReadOnlyAdmin):
    list_display = ["connector", "collections", "status", "requested_by", "requested_at"]
    list_filter = ["status"]


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    list_display = ["at", "username", "source", "action", "target"]
    list_filter = ["source", "action"]
    search_fields = ["target", "username", "action"]
    date_hierarchy = "at"
