"""A failed test's report carries the log tails of the server processes it ran."""

from __future__ import annotations

from collections.abc import Generator

import pytest
from tests._servers import servers_since


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        for server in servers_since(call.start):
            report.sections.append((f"server log {server.log}", server.tail()))
    return report
