"""v1.3.6's ``mail.utils.openai``: a swarm behind an OpenAI-style ``responses.create``.

:class:`SwarmOAIClient` answers ``client.responses.create(input=..., tools=...)`` with a
swarm of this process, as the server's debug ``POST /responses`` route does over HTTP (the
same translation: new user text becomes a message, trailing ``function_call_output``
items answer the breakpoint calls the swarm paused on, the response id is the task id so
``previous_response_id`` continues a task): it calls :func:`mail.server.create_response`,
which the route calls too. The first ``create`` imports the server (FastAPI).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mail.api import MAILSwarm, MAILSwarmTemplate

__all__ = ["async_lambda", "build_oai_clients_dict", "SwarmOAIClient"]


async def async_lambda(x: Any) -> Any:
    """Return ``x`` from a coroutine (for APIs that want an awaitable)."""
    return x


class _Responses:
    def __init__(self, client: SwarmOAIClient) -> None:
        self._client = client

    async def create(
        self,
        input: list[Any],  # the OpenAI parameter name
        tools: list[Any] | None = None,
        instructions: str | None = None,
        previous_response_id: str | None = None,
        timeout: float = 3600.0,
        **kwargs: Any,
    ) -> Any:
        """Run the swarm on ``input``; an ``openai`` ``Response`` when the client validates
        responses, else its dict. ``tools``, ``instructions`` and other OpenAI parameters
        are accepted and ignored: the swarm's agents have their own."""
        from mail.server import create_response  # noqa: PLC0415  # imports FastAPI

        body = await create_response(
            self._client._swarm(),
            input,
            previous_response_id=previous_response_id,
            model=self._client.template.name,
            timeout=timeout,
        )
        if not self._client.validate_responses:
            return body
        from openai.types.responses import Response  # noqa: PLC0415

        return Response.model_validate(body)


class SwarmOAIClient:
    """An OpenAI-client look-alike whose ``responses.create`` runs ``template``'s swarm.

    ``instance`` is a running :class:`mail.api.MAILSwarm` to use; without one the template
    is instantiated on first use (for user ``"default_user"``). ``validate_responses``:
    return ``openai.types.responses.Response`` objects (else plain dicts).
    """

    def __init__(
        self,
        template: MAILSwarmTemplate,
        instance: MAILSwarm | None = None,
        validate_responses: bool = True,
    ) -> None:
        self.template = template
        self.instance = instance
        self.validate_responses = validate_responses
        self.responses = _Responses(self)

    def _swarm(self) -> MAILSwarm:
        if self.instance is None:
            self.instance = self.template.instantiate({})
        return self.instance


def build_oai_clients_dict(
    templates: Mapping[str, MAILSwarmTemplate] | None = None,
) -> dict[str, SwarmOAIClient]:
    """A :class:`SwarmOAIClient` per swarm, by swarm name: of ``templates``, or (v1.3.6's
    call without arguments) of the swarm the configuration's ``swarms.json`` defines."""
    if templates is None:
        from mail.api import MAILSwarmTemplate  # noqa: PLC0415
        from mail.config import load_config  # noqa: PLC0415

        swarm = load_config().server.swarm
        template = MAILSwarmTemplate.from_swarm_json_file(swarm.name, swarm.source)
        templates = {template.name: template}
    return {name: SwarmOAIClient(template) for name, template in templates.items()}
