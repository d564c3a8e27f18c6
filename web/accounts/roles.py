"""The three roles of the platform and the one question views ask about them.

Roles are Django groups named `viewer`, `operator` and `admin` (created by migration 0001). They are
cumulative: an operator can do everything a viewer can, an admin everything an operator can. Superusers
are admins whatever their groups.
"""

from __future__ import annotations

VIEWER = "viewer"
OPERATOR = "operator"
ADMIN = "admin"
ROLES = (VIEWER, OPERATOR, ADMIN)  # ascending privilege
_RANK = {role: rank for rank, role in enumerate(ROLES, start=1)}


def role_rank(role: str) -> int:
    try:
        return _RANK[role]
    except KeyError:
        raise ValueError(f"unknown role {role!r}; roles are {', '.join(ROLES)}") from None


def highest_role(user) -> str | None:
    """The user's strongest role, or None for anonymous, inactive or role-less users."""
    if user is None or not user.is_authenticated or not user.is_active:
        return None
    if user.is_superuser:
        return ADMIN
    names = set(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
    held = [role for role in ROLES if role in names]
    return held[-1] if held else None


def has_role(user, role: str) -> bool:
    """True when `user` holds `role` or a stronger one."""
    required = role_rank(role)
    held = highest_role(user)
    return held is not None and role_rank(held) >= required
