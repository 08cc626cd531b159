"""The swarm viewer's browser tests: Playwright driving Debian's Chromium against real
``mail server`` processes (the offline swarm, its breakpoint variant and a swarm whose task
waits a minute). Skipped, with the reason, where Chromium is not installed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests._servers import Server, clean_env, start_server

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).parents[2]
OFFLINE = ROOT / "swarms.json"
FIXTURES = ROOT / "packages" / "ai-sdk-provider" / "test" / "fixtures"
SCREENSHOTS = ROOT / "docs" / "images"

if not CHROMIUM.exists():
    pytest.skip("Chromium not installed: apt-get install chromium", allow_module_level=True)

from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402


@dataclass(frozen=True, slots=True)
class Servers:
    offline: Server
    breakpoint: Server
    waiter: Server


def _start(swarm: str, source: Path, data: Path) -> Server:
    env = clean_env() | {"MAIL_LOG_LEVEL": "WARNING"}
    if source.parent == FIXTURES:  # the waiter swarm's agent and action live there
        path = os.pathsep.join(filter(None, [str(FIXTURES / "py"), env.get("PYTHONPATH")]))
        env["PYTHONPATH"] = path
    return start_server(swarm, source, env, data)


@pytest.fixture(scope="package")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    """One server per swarm, shared by the package's tests (each test opens a new page)."""
    started: list[Server] = []
    try:
        for swarm, source in (
            ("offline", OFFLINE),
            ("offline-breakpoint", FIXTURES / "swarms.json"),
            ("waiter", FIXTURES / "swarms.json"),
        ):
            started.append(_start(swarm, source, tmp_path_factory.mktemp(swarm) / "data"))
        yield Servers(*started)
    finally:
        for server in started:
            server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # Per module, not per package: tests/ui is no Python package (no __init__.py), so a
    # "package" fixture would live to the end of the session, and while Playwright's sync
    # API runs, its event loop is this thread's running loop: every later asyncio.run()
    # and async test of the session would fail.
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM))
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh browser context (empty storage) at 1280x800; its page errors fail the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page = context.new_page()
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_default_timeout(15_000)
    yield page
    context.close()
    assert errors == [], f"the page raised: {errors}"


@pytest.fixture
def screenshot_dir(tmp_path: Path) -> Path:
    """docs/images with MAIL_UPDATE_SCREENSHOTS=1, else a temporary folder."""
    if os.environ.get("MAIL_UPDATE_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        return SCREENSHOTS
    return tmp_path
