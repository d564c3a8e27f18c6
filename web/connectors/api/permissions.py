"""Role checks for the APIs: each view names the role an action needs (viewer < operator < admin)."""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from web.accounts.roles import ADMIN, VIEWER, has_role


class RolePermission(BasePermission):
    """Grants the request when the user holds the role `view.required_role(request)` names.

    Views set `action_roles` ({action or HTTP method: role}); unlisted reads need viewer, unlisted writes admin.
    Anonymous callers are refused before this runs (IsAuthenticated semantics: 401).
    """

    message = "Your role does not allow this."

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not user or not user.is_authenticated:
            return False
        role = required_role(request, view)
        self.message = f"This needs the {role} role."
        return has_role(user, role)


def required_role(request, view) -> str:
    roles = getattr(view, "action_roles", {})
    action = getattr(view, "action", None)
    if action in roles:
        return roles[action]
    if request.method in roles:
        return roles[request.method]
    return VIEWER if request.method in SAFE_METHODS else ADMIN
