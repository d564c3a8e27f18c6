"""`manage.py ensure_admin` creates the admin once and prints the same stored password on every run."""

from __future__ import annotations

import re
import stat
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from web.accounts.roles import ADMIN, has_role

pytestmark = pytest.mark.django_db
LINE = re.compile(r"^Admin user: admin  password: (\S+)$")


def ensure_admin(*args: str) -> str:
    out = StringIO()
    call_command("ensure_admin", *args, stdout=out)
    return out.getvalue().strip()


@pytest.fixture(autouse=True)
def state_dir(settings, tmp_path):
    settings.STATE_DIR = tmp_path
    return tmp_path


def test_creates_admin_and_reprints_the_same_password(state_dir):
    first = LINE.match(ensure_admin())
    assert first, "expected the password line"
    password = first.group(1)
    assert ensure_admin() == first.group(0)
    admin = get_user_model().objects.get(username="admin")
    assert admin.check_password(password) and admin.is_superuser and has_role(admin, ADMIN)
    stored = state_dir / "admin_password"
    assert stored.read_text().strip() == password
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600


def test_changed_password_is_not_printed_and_can_be_reset(state_dir):
    ensure_admin()
    admin = get_user_model().objects.get(username="admin")
    admin.set_password("changed-by-the-user")
    admin.save()
    assert "password: (changed since" in ensure_admin()
    new = LINE.match(ensure_admin("--reset-password")).group(1)
    admin.refresh_from_db()
    assert admin.check_password(new)
