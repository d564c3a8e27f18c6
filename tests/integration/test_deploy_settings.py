"""Settings sanity: `manage.py check --deploy` in production mode, the refusals of production mode, and the
development secret key. Each case runs manage.py in a subprocess because settings are read once, at start-up.

Accepted `check --deploy` warnings (docs/configuration-django.md explains each):
- production: security.W005 (HSTS includeSubDomains) and security.W021 (HSTS preload) stay opt-in, because both
  bind every other host of the domain and preload cannot be undone quickly.
- development: DEBUG on, no HTTPS (W004, W008, W012, W016, W018); development is not a deployment.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

pytestmark = pytest.mark.integration

PROJECT_ROOT = Path(__file__).resolve().parents[2]
ACCEPTED_IN_PRODUCTION = {"security.W005", "security.W021"}
ACCEPTED_IN_DEVELOPMENT = {"security.W004", "security.W008", "security.W012", "security.W016", "security.W018"}
MODE_VARIABLES = (
    "CDC_ENV", "SECRET_KEY", "DJANGO_DEBUG", "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS", "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD", "SECURE_PROXY_SSL_HEADER", "DATABASE_URL", "CDC_ENCRYPTION_KEY",
)
CHECK_ID = re.compile(r"\(([a-z_]+\.[WE]\d{3})\)")


def manage(state_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    base = {key: value for key, value in os.environ.items() if key not in MODE_VARIABLES}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120,
        env={**base, "DEVSTACK_HOME": str(state_dir), **env},
    )


def production_env() -> dict[str, str]:
    return {
        "CDC_ENV": "production",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "cdc.example.com",
        "CSRF_TRUSTED_ORIGINS": "https://cdc.example.com",
        "CDC_ENCRYPTION_KEY": Fernet.generate_key().decode(),
    }


def reported_checks(result: subprocess.CompletedProcess) -> set[str]:
    return set(CHECK_ID.findall(result.stdout + result.stderr))


def test_production_check_deploy_has_only_accepted_warnings(tmp_path):
    result = manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **production_env())
    found = reported_checks(result)
    assert found <= ACCEPTED_IN_PRODUCTION, result.stdout + result.stderr
    assert result.returncode == (1 if found else 0), result.stdout + result.stderr


def test_development_check_deploy_warnings_are_the_documented_ones(tmp_path):
    result = manage(tmp_path, "check", "--deploy")
    assert result.returncode == 0, result.stderr
    assert reported_checks(result) <= ACCEPTED_IN_DEVELOPMENT, result.stdout + result.stderr


@pytest.mark.parametrize("missing", ["SECRET_KEY", "ALLOWED_HOSTS", "CDC_ENCRYPTION_KEY"])
def test_production_refuses_to_start_without(tmp_path, missing):
    env = production_env()
    del env[missing]
    result = manage(tmp_path, "check", **env)
    assert result.returncode != 0
    assert f"{missing} is" in result.stderr.splitlines()[-1]
    assert not (tmp_path / "secret_key").exists()


def test_production_refuses_debug(tmp_path):
    result = manage(tmp_path, "check", **production_env(), DJANGO_DEBUG="1")
    assert result.returncode != 0
    assert "DJANGO_DEBUG=1 is refused" in result.stderr


def test_development_secret_key_is_generated_once_private_and_reused(tmp_path):
    show_key = ("shell", "-c", "from django.conf import settings; print('KEY', settings.SECRET_KEY)")
    first = manage(tmp_path, *show_key)
    second = manage(tmp_path, *show_key)
    assert first.returncode == 0, first.stderr
    key_file = tmp_path / "secret_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_text().strip()
    assert len(key) >= 50
    assert f"KEY {key}" in first.stdout
    assert f"KEY {key}" in second.stdout


def test_development_encryption_key_is_generated_once_private_and_reused(tmp_path):
    show_key = ("shell", "-c", "from django.conf import settings; print('KEY', settings.CDC_ENCRYPTION_KEY)")
    first = manage(tmp_path, *show_key)
    second = manage(tmp_path, *show_key)
    assert first.returncode == 0, first.stderr
    key_file = tmp_path / "encryption_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_text().strip()
    Fernet(key)  # a usable Fernet key
    assert f"KEY {key}" in first.stdout
    assert f"KEY {key}" in second.stdout


def test_a_malformed_encryption_key_fails_the_system_check(tmp_path):
    result = manage(tmp_path, "check", CDC_ENCRYPTION_KEY="not-a-fernet-key")
    assert result.returncode != 0
    assert "connectors.E001" in result.stderr
    assert "not-a-fernet-key" not in result.stderr  # the key itself is never echoed
