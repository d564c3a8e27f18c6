"""has_role: viewer ⊂ operator ⊂ admin, superusers are admins, anonymous and inactive users have no role."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser, Group

from web.accounts.roles import ADMIN, OPERATOR, ROLES, VIEWER, has_role, highest_role

pytestmark = pytest.mark.django_db


def user_in(django_user_model, *groups, **fields):
    user = django_user_model.objects.create_user(f"user-{'-'.join(groups) or 'none'}", **fields)
    user.groups.add(*(Group.objects.get(name=name) for name in groups))
    return user


def test_migration_created_the_role_groups():
    assert set(Group.objects.filter(name__in=ROLES).values_list("name", flat=True)) == set(ROLES)


@pytest.mark.parametrize(
    ("group", "expected"),
    [
        (VIEWER, {VIEWER: True, OPERATOR: False, ADMIN: False}),
        (OPERATOR, {VIEWER: True, OPERATOR: True, ADMIN: False}),
        (ADMIN, {VIEWER: True, OPERATOR: True, ADMIN: True}),
    ],
)
def test_roles_are_cumulative(django_user_model, group, expected):
    user = user_in(django_user_model, group)
    assert {role: has_role(user, role) for role in ROLES} == expected
    assert highest_role(user) == group


def test_strongest_group_wins(django_user_model):
    user = user_in(django_user_model, VIEWER, ADMIN)
    assert has_role(user, ADMIN)
    assert highest_role(user) == ADMIN


def test_superuser_is_admin_without_groups(django_user_model):
    user = django_user_model.objects.create_superuser("root", password="x")
    assert all(has_role(user, role) for role in ROLES)


def test_user_without_role_group_has_no_role(django_user_model):
    user = user_in(django_user_model)
    user.groups.add(Group.objects.create(name="unrelated"))
    assert not any(has_role(user, role) for role in ROLES)
    assert highest_role(user) is None


def test_anonymous_and_inactive_users_have_no_role(django_user_model):
    inactive = user_in(django_user_model, ADMIN, is_active=False)
    assert not has_role(AnonymousUser(), VIEWER)
    assert not has_role(inactive, VIEWER)


def test_unknown_role_is_an_error(django_user_model):
    with pytest.raises(ValueError, match="unknown role 'owner'"):
        has_role(user_in(django_user_model, ADMIN), "owner")
