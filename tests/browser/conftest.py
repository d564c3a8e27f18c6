"""Browser tests: Debian's chromium driven by Playwright against the real platform processes (daphne, a Celery
worker and beat), the stack's Redis and Kafka, and the module's emulated replica set.

Never `playwright install`: the browser is /usr/bin/chromium. Screenshots go to test-artifacts/ (git-ignored).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.platform_processes import ROOT, Platform

CHROMIUM = os.environ.get("CDC_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
ARTIFACTS = ROOT / "test-artifacts"
REDIS_DB = 13  # apart from a running demo (0) and the other process tests (14, 15)
PASSWORD = "browser-test-password-1"  # noqa: S105 - throwaway users of a temporary database
WIDE = {"width": 1280, "height": 800}
NARROW = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def platform(stack, tmp_path_factory):
    """Web server, worker (every queue, Spark on local[2]) and beat over a fresh database, with users bt-admin,
    bt-operator and bt-viewer."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (scripts/install.sh installs Debian's chromium)")
    tmp = tmp_path_factory.mktemp("platform")
    processes = Platform(stack, tmp, REDIS_DB, SPARK_MASTER="local[2]", SPARK_OUTPUT_ROOT=str(tmp / "spark"))
    processes.migrate()
    token = processes.django(
        "from django.contrib.auth.models import Group, User\n"
        "from rest_framework.authtoken.models import Token\n"
        "for role in ('admin', 'operator', 'viewer'):\n"
        f"    user = User.objects.create_user('bt-' + role, password={PASSWORD!r})\n"
        "    user.groups.add(Group.objects.get(name=role))\n"
        "print(Token.objects.create(user=User.objects.get(username='bt-viewer')).key)\n"
    ).strip().splitlines()[-1]
    processes.viewer_token = token
    processes.start_worker("worker", queues="streaming,default,snapshot,spark", concurrency=6)
    processes.start_beat()
    processes.start_web()
    yield processes
    processes.stop()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


class Session:
    """One logged-in browser context; remembers console errors and uncaught exceptions of its pages."""

    def __init__(self, browser, base_url: str, viewport: dict):
        self.base_url = base_url
        self.context = browser.new_context(viewport=viewport, base_url=base_url)
        self.context.set_default_timeout(15_000)
        self.errors: list[str] = []

    def page(self):
        page = self.context.new_page()
        page.on("console", lambda message: message.type == "error" and self.errors.append(
            f"{page.url}: {message.text}"))
        page.on("pageerror", lambda error: self.errors.append(f"{page.url}: {error}"))
        page.on("dialog", lambda dialog: dialog.accept())  # confirmations are accepted
        return page

    def login(self, username: str):
        page = self.page()
        page.goto("/login/")
        page.get_by_label("User name").fill(username)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{self.base_url}/")
        return page

    def csrf(self, page) -> str:
        return page.locator('meta[name="csrf-token"]').get_attribute("content")

    def close(self):
        self.context.close()


@pytest.fixture
def session(browser, platform):
    """session(role, viewport=WIDE) -> a logged-in page; at the end no page may have logged an error."""
    opened: list[Session] = []

    def open_session(role: str, viewport: dict = WIDE):
        current = Session(browser, platform.base_url, viewport)
        opened.append(current)
        return current, current.login(f"bt-{role}")

    yield open_session
    errors = [error for current in opened for error in current.errors]
    for current in opened:
        current.close()
    assert not errors, "console errors:\n" + "\n".join(errors)


def screenshot(page, name: str, full_page: bool = True) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def text_number(text: str) -> float:
    digits = "".join(ch for ch in text if ch.isdigit() or ch == ".")
    return float(digits) if digits else 0.0


def json_of(raw: str):
    return json.loads(raw)
