"""The admin's API tokens page: who has which tokens (their first characters), when issued; adding one shows its
key once; deleting one revokes it. DRF's own Tokens page (clear keys) is replaced."""

from __future__ import annotations

from django.contrib import admin, messages
from rest_framework.authtoken.models import TokenProxy

from web.accounts import tokens
from web.accounts.models import ApiToken

admin.site.unregister(TokenProxy)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("prefix", "user", "created")
    search_fields = ("user__username", "prefix")
    fields = ("user",)
    readonly_fields = ()

    def get_readonly_fields(self, request, obj=None):
        return ("user", "prefix", "created") if obj is not None else ()

    def get_fields(self, request, obj=None):
        return ("user", "prefix", "created") if obj is not None else ("user",)

    def save_model(self, request, obj, form, change):
        if change:
            return
        key = tokens.issue(obj.user)
        created = ApiToken.objects.get(digest=tokens.digest_of(key))
        obj.pk, obj.digest, obj.prefix, obj.created = created.pk, created.digest, created.prefix, created.created
        messages.warning(request, f"The new token of {obj.user} is {key} — copy it now: it is stored hashed and "
                                  "cannot be shown again.")
