"""Health checks of registered peers: one owned loop, exponential backoff, measured latency."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from mail.net._endpoint import SwarmEndpoint, utc_now
from mail.net._peer_http import PeerClient

__all__ = ["HEALTH_TASK_NAME", "HealthMonitor"]

logger = logging.getLogger("mail.net.registry")

#: Name of the background task that runs the health loop.
HEALTH_TASK_NAME = "mail-registry-health"


class HealthMonitor:
    """Checks the peers of one registry's endpoint table (the local swarm excluded).

    A peer that failed ``n`` times in a row is next due ``min(interval * 2**n,
    max_backoff)`` seconds later on ``clock``; a success makes it due again after
    ``interval``. ``on_down(name, problem)`` is called after each failed check.
    """

    def __init__(
        self,
        endpoints: dict[str, SwarmEndpoint],
        local_name: str,
        client: PeerClient,
        *,
        interval: float,
        max_backoff: float,
        clock: Callable[[], float],
        on_down: Callable[[str, str], None] | None = None,
    ) -> None:
        self._endpoints = endpoints
        self._local_name = local_name
        self._client = client
        self.interval = interval
        self.max_backoff = max_backoff
        self.clock = clock
        self.on_down = on_down
        self._task: asyncio.Task[None] | None = None

    async def check(self, endpoint: SwarmEndpoint) -> bool:
        """GET the endpoint's health URL and record the outcome; True on HTTP 200."""
        ok, problem, latency = await self._client.probe(endpoint.health_check_url)
        if self._endpoints.get(endpoint.swarm_name) is not endpoint:
            return ok  # unregistered or replaced meanwhile: not ours to update
        if ok:
            if not endpoint.is_active:
                logger.info("swarm %r is active again", endpoint.swarm_name)
            endpoint.is_active, endpoint.last_seen, endpoint.latency = True, utc_now(), latency
            endpoint.failures = 0
            endpoint.next_check = self.clock() + self.interval
            return True
        if endpoint.is_active:
            logger.warning("swarm %r is now inactive: %s", endpoint.swarm_name, problem)
        endpoint.is_active, endpoint.latency = False, None
        endpoint.failures += 1
        delay = min(self.interval * 2**endpoint.failures, self.max_backoff)
        endpoint.next_check = self.clock() + delay
        logger.debug("swarm %r: next health check in %.0f s", endpoint.swarm_name, delay)
        if self.on_down is not None:
            try:
                self.on_down(endpoint.swarm_name, problem)
            except Exception:  # a listener's bug must not stop the health checks
                logger.exception("telling of swarm %r's failed check failed", endpoint.swarm_name)
        return False

    async def run(self, *, only_due: bool = True) -> dict[str, bool]:
        """Check the (due) peers concurrently; ``{name: healthy}`` for those checked."""
        now = self.clock()
        due = [
            e
            for name, e in self._endpoints.items()
            if name != self._local_name and (not only_due or e.next_check <= now)
        ]
        results = await asyncio.gather(*(self.check(e) for e in due), return_exceptions=True)
        healthy: dict[str, bool] = {}
        for endpoint, result in zip(due, results, strict=True):
            if isinstance(result, BaseException):
                logger.error(
                    "health check of swarm %r failed", endpoint.swarm_name, exc_info=result
                )
            else:
                healthy[endpoint.swarm_name] = result
        return healthy

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> asyncio.Task[None]:
        """Start the loop unless it runs; returns the one loop task."""
        if self._task is None or self._task.done():
            task = asyncio.get_running_loop().create_task(self._loop(), name=HEALTH_TASK_NAME)
            task.add_done_callback(_log_end)
            self._task = task
            logger.info("started swarm health checks every %.0f s", self.interval)
        return self._task

    async def stop(self) -> None:
        """Cancel the loop and wait for it; our own cancellation still propagates."""
        task, self._task = self._task, None
        if task is None or task.done():
            return
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise

    async def _loop(self) -> None:
        while True:
            try:
                await self.run()
            except Exception:
                logger.exception("swarm health check round failed")
            await asyncio.sleep(self.interval)


def _log_end(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("swarm health loop crashed", exc_info=task.exception())
