"""`manage.py ensure_admin`: make sure an admin user exists and print how to log in.

First run: creates the superuser `admin` (member of the `admin` group) with a random password, stores that
password in .devstack/admin_password (mode 0600) and prints `Admin user: admin  password: …`. Later runs
print the same line again without changing anything. If the password was changed since (in the admin or
with `changepassword`), it is not printed; `--reset-password` generates and stores a new one.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction

from web.accounts.roles import ADMIN


def password_file() -> Path:
    return Path(settings.STATE_DIR) / "admin_password"


def read_stored_password(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except FileNotFoundError:
        return None


def store_password(path: Path, password: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(password + "\n")
    os.chmod(path, 0o600)  # also when the file existed with looser permissions


class Command(BaseCommand):
    help = "Create the admin user if missing (random password, stored in .devstack/admin_password) and print it."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")
        parser.add_argument("--email", default="admin@localhost")
        parser.add_argument("--reset-password", action="store_true", help="set and store a new random password")

    def handle(self, *args, username, email, reset_password, **options):
        path = password_file()
        stored = read_stored_password(path)
        with transaction.atomic():
            user, created = get_user_model().objects.get_or_create(
                username=username, defaults={"email": email, "is_staff": True, "is_superuser": True}
            )
            if created or reset_password:
                password = stored if created and stored and not reset_password else secrets.token_urlsafe(12)
                user.set_password(password)
                user.is_staff = user.is_superuser = True
                user.save()
                store_password(path, password)
            else:
                password = stored if stored and user.check_password(stored) else None
            user.groups.add(Group.objects.get_or_create(name=ADMIN)[0])
        if password:
            self.stdout.write(f"Admin user: {username}  password: {password}")
        else:
            self.stdout.write(
                f"Admin user: {username}  password: (changed since it was generated; "
                f"`manage.py ensure_admin --reset-password` sets a new one)"
            )
