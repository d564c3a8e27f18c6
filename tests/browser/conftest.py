"""Browser tests: Debian's chromium driven by Playwright against the real platform processes (daphne, a Celery
worker and beat), the stack's Redis and Kafka, and the module's emulated replica set.

Never `playwright install`: the browser is /usr/bin/chromium. Screenshots go to test-artifacts/ (git-ignored).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests import run_summary
from tests.platform_processes import ROOT, Platform

CHROMIUM = os.environ.get("CDC_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
ARTIFACTS = ROOT / "test-artifacts"
REDIS_DB = 13  # apart from a running demo (0) and the other process tests (14, 15)
PASSWORD = "browser-test-password-1"  # noqa: S105 - throwaway users of a temporary database
WIDE = {"width": 1280, "height": 800}
NARROW = {"width": 390, "height": 844}


@pytest.fixture(scope="session")
def platform(stack, tmp_path_factory):
    """Web server, worker (every queue, Spark on local[2]) and beat over a fresh database, with users bt-admin,
    bt-operator and bt-viewer. One for the whole session (starting it takes seconds): a test names what it creates
    (connectors, jobs) uniquely and looks only at that; a module's connectors go with its replica set (`mongo_rs`).
    The three users serve every test, so a user's rate of connection checks is raised: at the default (20/min) one
    test's live checks would starve the next test's (test_table_preview.py tests the form's answer to "not now")."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (scripts/install.sh installs Debian's chromium)")
    tmp = tmp_path_factory.mktemp("platform")
    processes = Platform(stack, tmp, REDIS_DB, SPARK_MASTER="local[2]", SPARK_OUTPUT_ROOT=str(tmp / "spark"),
                         CDC_CONNECTIVITY_CHECK_RATE="600/min")
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
def mongo_rs(mongo_rs, platform):
    """The module's replica set (tests/conftest.py). Before it stops, the connectors created in the module (over it)
    are deleted and their pipelines gone: the platform outlives the module, and each pipeline holds a worker thread."""
    yield mongo_rs
    delete_every_connector(platform)


def delete_every_connector(platform) -> None:
    left = platform.django(
        "from web.connectors import services\n"
        "from web.connectors.models import Connector\n"
        "from workers import control\n"
        "names = [connector.name for connector in Connector.objects.all()]\n"
        "for connector in Connector.objects.all():\n"
        "    services.delete_connector(connector, user=None, source='system')\n"
        "import time\n"
        "deadline = time.monotonic() + 45\n"
        "def running(name):\n"
        "    return not control.wait_until_stopped(name, max(0.1, deadline - time.monotonic()))\n"
        "print([name for name in names if running(name)])\n"
    ).strip().splitlines()[-1]
    assert left == "[]", f"pipelines still running after their connector was deleted: {left}"


class RunningChromium:
    """Playwright and Chromium, started when a browser test first needs them and stopped once the next test to run
    is not a browser test. While Playwright runs, its event loop is the thread's running loop, and Django refuses
    database calls from there (SynchronousOnlyOperation): a worker of a parallel run goes on to other suites'
    files once it has run this one."""

    def __init__(self):
        self.playwright = None
        self.browser = None

    def get(self):
        if self.browser is None:
            from playwright.sync_api import sync_playwright

            self.playwright = sync_playwright().start()
            self.browser = self.playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        return self.browser

    def stop(self) -> None:
        if self.browser is not None:
            self.browser.close()
            self.playwright.stop()
            self.browser = self.playwright = None


running_chromium = RunningChromium()


@pytest.fixture(scope="session")
def chromium():
    """Stops Chromium at the end of the session too, before the session fixtures set up earlier (the test database
    of pytest-django, whose teardown is a database call) are torn down."""
    yield running_chromium
    running_chromium.stop()


@pytest.fixture
def browser(chromium):
    return chromium.get()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield  # the test's fixtures (its browser contexts) are gone
    if nextitem is None or run_summary.suite_of(nextitem.nodeid) != "browser":
        running_chromium.stop()


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


# Keeps the type of each message the page's live socket delivers, once the page's own handler has run (a listener
# added here runs before the `onmessage` the page assigns later, so it records on the next task).
SOCKET_MESSAGES = """(() => {
  const Native = window.WebSocket;
  window.__socketMessages = [];
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => setTimeout(() => {
        try { window.__socketMessages.push(JSON.parse(event.data).type); } catch (e) { /* not JSON */ }
      }, 0));
    }
  };
})()"""


def record_socket_messages(page) -> None:
    """From the next page loaded on: wait_for_socket_message(page, kind) can wait for a live message."""
    page.add_init_script(SOCKET_MESSAGES)


def wait_for_socket_message(page, kind: str, timeout_ms: int = 15_000) -> None:
    """Until the current page applied a live message of `kind` (hello, connectors, metrics)."""
    page.wait_for_function("kind => (window.__socketMessages || []).includes(kind)", arg=kind, timeout=timeout_ms)


def create_connector(platform, mongo_rs, name: str, **extra) -> None:
    """A running MongoDB connector `name` over the database `name` of the replica set, without a snapshot, created
    through the services as the API does; `extra` properties added."""
    properties = {"name": name, "topic.prefix": name, "mongodb.connection.string": mongo_rs.uri,
                  "database.include.list": name, "snapshot.mode": "no_data", "poll.interval.ms": 100,
                  "offset.storage.topic": f"{name}.offsets", **extra}
    platform.django(
        "from web.connectors import drafts, services\n"
        f"services.create_connector(drafts.prepare({properties!r}), user=None, source='system')\n"
    )


def wait_streaming(page, name: str, timeout_ms: int = 60_000) -> None:
    """Until the page received a live report of `name` streaming, connected."""
    page.wait_for_function(
        """name => Object.values(window.cdcLive.reports).some(r => r.connector === name &&
             r.metrics && r.metrics.phase === "streaming" && r.metrics.Connected && !r.final)""",
        arg=name, timeout=timeout_ms)


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
