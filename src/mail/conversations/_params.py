"""The params of every method of ``POST /map``: one pydantic model per method, checked
before the method does anything (:func:`parse_params`).

Names are the seed's, in camelCase (``conversationId``, ``catchUp.from``); our extensions
keep theirs (``x-allCallers``, ``startTask``, ``taskId``). Values are taken as JSON sends
them, without coercion (``"5"`` is not a number, ``1`` is not ``true``). An optional
field may be ``null`` (the same as leaving it out), except where a default stands in for
it (``type``, ``role`` of an invitation, ``status``, ``order``) and in ``permissions`` and
``visibility``. Keys a model does not name are ignored, except in ``permissions``,
``startTask``, the filters of ``mail/list`` and ``mail/turns/list`` and a subscription's
``filter.mail``, where an unknown key is a mistake (a filter silently ignored would answer
the wrong rows).

Every string, at any depth (``content`` and ``metadata`` too, keys included), must be text
the stores can hold (:func:`mail._text.find_bad_text`).

A failure raises :class:`~mail.conversations._access.InvalidParamsError` (JSON-RPC
-32602) whose message names each wrong parameter by its path and says what it must be:
``params.include: must be an object, got 5``; ``data.field`` is the first one's path
under ``params`` (``include``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic import model_validator as _model_validator
from pydantic_core import ErrorDetails, PydanticCustomError

from mail._limits import task_id_problem
from mail._text import find_bad_text
from mail.conversations._access import InvalidParamsError
from mail.conversations.events import REPLAY_LIMIT
from mail.conversations.models import ConversationStatus, ConversationType, HistoryAccess, Role

__all__ = ["PARAMS", "Params", "check_params", "describe", "parse_params", "problems"]

#: the error type of this module's own checks (their message is the whole problem)
_OURS = "mail_params"


class Params(BaseModel):
    """A method's params, or an object inside them: strict, unknown keys ignored."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False, extra="ignore")


class _Closed(Params):
    """An object whose keys are all known: an unknown one is refused, naming the known."""

    @_model_validator(mode="before")
    @classmethod
    def _known_keys_only(cls, data: Any) -> Any:
        if isinstance(data, dict):
            names = [field.alias or name for name, field in cls.model_fields.items()]
            unknown = [key for key in data if key not in names]
            if unknown:
                raise PydanticCustomError(
                    _OURS,
                    "has no field {unknown}; its fields are {names}",
                    {"unknown": _shown(unknown[0]), "names": ", ".join(names)},
                )
        return data


def _non_empty(value: Any) -> Any:
    if not isinstance(value, str) or not value:
        raise PydanticCustomError(
            _OURS, "must be a non-empty string, got {got}", {"got": _shown(value)}
        )
    return value


def _task_id(value: Any) -> Any:
    problem = task_id_problem(value) if isinstance(value, str) else None
    if problem is not None:
        raise PydanticCustomError(_OURS, "{problem}", {"problem": problem})
    return value


def _start_task(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, dict) and set(value) <= {"entrypoint"}:
        entrypoint = value.get("entrypoint")
        if entrypoint is None or (isinstance(entrypoint, str) and entrypoint):
            return value
    raise PydanticCustomError(
        _OURS,
        "must be true or an object with only entrypoint (an agent's name), got {got}",
        {"got": _shown(value)},
    )


#: a string that must not be empty (ids)
NonEmpty = Annotated[str, BeforeValidator(_non_empty)]
#: how many, at least one
Count = Annotated[int, Field(ge=1)]
Flag = bool | None


# --- shared parts ---------------------------------------------------------------------------


class Permissions(_Closed):
    """``permissions`` (each one given is set; the others keep the role's default)."""

    canSend: bool = True
    canObserve: bool = True
    canInvite: bool = False
    canRemove: bool = False
    canCreateThreads: bool = True
    historyAccess: HistoryAccess = "full"
    canSeeInternal: bool = False


class Visibility(Params):
    """A turn's ``visibility``; the listed participants are ``ids`` (the SDK's name) or
    ``participants`` (ours), or both (then the turn lists every id of either)."""

    type: Literal["all", "participants", "role", "private"]
    ids: list[str] = Field(default_factory=list)
    participants: list[str] = Field(default_factory=list)
    roles: list[Role] = Field(default_factory=list)


class NewParticipant(Params):
    """``participant`` of ``mail/invite``, an item of ``initialParticipants``."""

    id: NonEmpty
    role: Role = "worker"
    permissions: Permissions | None = None


class TurnFields(Params):
    """A turn: ``mail/turn``'s params, ``mail/create``'s ``initialTurn``. Whether
    ``contentType`` is known is the method's check (10008)."""

    contentType: NonEmpty
    content: Any
    threadId: str | None = None
    inReplyTo: str | None = None
    visibility: Visibility | None = None
    metadata: dict[str, Any] | None = None


class OfConversation(Params):
    """The params of a method on one conversation."""

    conversationId: NonEmpty


# --- mail/* ---------------------------------------------------------------------------------


class MailCreate(Params):
    type: ConversationType = "mixed"
    subject: str | None = None
    parentConversationId: str | None = None
    parentTurnId: str | None = None
    initialParticipants: list[NewParticipant] | None = None
    initialTurn: TurnFields | None = None
    metadata: dict[str, Any] | None = None
    taskId: Annotated[str, BeforeValidator(_task_id)] | None = None
    startTask: Annotated[Any, BeforeValidator(_start_task)] = None


class GetInclude(Params):
    participants: Flag = None
    threads: Flag = None
    recentTurns: Annotated[int, Field(ge=0)] | None = None
    stats: Flag = None


class MailGet(OfConversation):
    include: GetInclude | None = None


#: a time in epoch milliseconds
Millis = Annotated[int, Field(ge=0)]


class ListFilter(_Closed):
    type: list[ConversationType] | None = None
    status: list[ConversationStatus] | None = None
    participantId: str | None = None
    createdAfter: Millis | None = None
    createdBefore: Millis | None = None
    parentConversationId: str | None = None
    taskId: NonEmpty | None = None
    allCallers: Flag = Field(None, alias="x-allCallers")


class MailList(Params):
    filter: ListFilter | None = None
    limit: Count | None = None
    cursor: str | None = None


class MailClose(OfConversation):
    reason: str | None = None
    status: Literal["completed", "archived"] = "completed"


def _catch_up_from(value: Any) -> Any:
    if value is None or (isinstance(value, str) and value):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise PydanticCustomError(
        _OURS,
        "must be a turn id (history after that turn) or a time in epoch milliseconds "
        "(history from then on), got {got}",
        {"got": _shown(value)},
    )


class CatchUp(Params):
    since: Annotated[Any, BeforeValidator(_catch_up_from)] = Field(None, alias="from")
    limit: Count | None = None
    includeSummary: Flag = None


class MailJoin(OfConversation):
    role: Role | None = None
    permissions: Permissions | None = None
    catchUp: CatchUp | None = None


class MailLeave(OfConversation):
    reason: str | None = None
    participantId: str | None = None


class MailInvite(OfConversation):
    participant: NewParticipant
    message: str | None = None


class MailTurn(TurnFields, OfConversation):
    pass


class TurnsFilter(_Closed):
    threadId: str | None = None
    includeAllThreads: Flag = None
    contentTypes: list[str] | None = None
    participantId: str | None = None
    afterTurnId: NonEmpty | None = None
    beforeTurnId: NonEmpty | None = None
    afterTimestamp: float | None = None
    beforeTimestamp: float | None = None


class MailTurnsList(OfConversation):
    filter: TurnsFilter | None = None
    limit: Count | None = None
    #: the seed shows "asc"; "desc" is its reverse
    order: Literal["asc", "desc"] = "asc"
    cursor: str | None = None


class MailThreadCreate(OfConversation):
    rootTurnId: NonEmpty
    subject: str | None = None
    parentThreadId: str | None = None


class MailThreadList(OfConversation):
    parentThreadId: str | None = None
    limit: Count | None = None
    cursor: str | None = None


class SummaryScope(_Closed):
    threadId: str | None = None
    fromTurnId: NonEmpty | None = None
    toTurnId: NonEmpty | None = None


class SummaryInclude(Params):
    keyPoints: Flag = None
    keyDecisions: Flag = None
    openQuestions: Flag = None
    #: the SDK's; our summaries have no participants section, so it changes nothing
    participants: Flag = None


class MailSummary(OfConversation):
    scope: SummaryScope | None = None
    regenerate: Flag = None
    include: SummaryInclude | None = None


class MailReplay(OfConversation):
    fromTurnId: str | None = None
    fromTimestamp: Millis | None = None
    threadId: str | None = None
    limit: Count | None = None
    contentTypes: list[str] | None = None
    cursor: str | None = None


class TurnRedact(OfConversation):
    turnId: NonEmpty
    reason: str | None = None


# --- map/* ----------------------------------------------------------------------------------


class MailCapabilities(Params):
    canCreate: Flag = None
    canJoin: Flag = None
    canInvite: Flag = None
    canViewHistory: Flag = None
    canCreateThreads: Flag = None


class Capabilities(Params):
    mail: MailCapabilities | None = None


class AuthCredentials(Params):
    """``auth`` of ``map/connect`` and the params of ``map/authenticate`` (the official
    SDK's ``AuthCredentials``): ``method`` (the server says which it takes) and
    ``credential``; ``metadata`` is ignored."""

    method: NonEmpty
    credential: str | None = None


class MapConnect(Params):
    capabilities: Capabilities | None = None
    auth: AuthCredentials | None = None


class MapAuthenticate(AuthCredentials):
    pass


class MapDisconnect(Params):
    reason: str | None = None


class MailFilter(_Closed):
    """``filter.mail`` of ``map/subscribe``: what a ``mail.*`` event must match (AND)."""

    conversationId: str | None = None
    threadId: str | None = None
    participantId: str | None = None
    contentType: str | None = None


class SubscriptionFilter(Params):
    eventTypes: list[str] | None = None
    mail: MailFilter | None = None
    allCallers: Flag = Field(None, alias="x-allCallers")

    def wire(self) -> dict[str, Any]:
        """The filter as the event bus reads it: the known keys that were given."""
        return self.model_dump(by_alias=True, exclude_unset=True)


class MapSubscribe(Params):
    filter: SubscriptionFilter | None = None


class MapUnsubscribe(Params):
    subscriptionId: NonEmpty


def _event_id(value: Any) -> Any:
    if not isinstance(value, str) or not value.isascii() or not value.isdigit():
        raise PydanticCustomError(
            _OURS, "must be an eventId (a string of digits), got {got}", {"got": _shown(value)}
        )
    return value


class MapReplay(Params):
    """``map/replay`` (the official SDK's ``ReplayRequestParams``): the caller's events
    after ``afterEventId`` (or from ``fromTimestamp``), up to ``toTimestamp``, passing
    ``filter``, at most ``limit`` (1-1000, 100 by default)."""

    afterEventId: Annotated[str, BeforeValidator(_event_id)] | None = None
    fromTimestamp: Annotated[int, Field(ge=0)] | None = None
    toTimestamp: Annotated[int, Field(ge=0)] | None = None
    filter: SubscriptionFilter | None = None
    limit: Annotated[int, Field(ge=1, le=REPLAY_LIMIT)] | None = None


class MetaMail(Params):
    """``meta.mail`` of ``map/send``: the conversation the message is a turn of."""

    conversationId: NonEmpty
    threadId: str | None = None
    inReplyTo: str | None = None
    visibility: Visibility | None = None


class SendMeta(Params):
    mail: MetaMail | None = None


def _address(value: Any) -> Any:
    """``to`` of ``map/send``: an agent id, or an object whose ``agent`` is one or whose
    ``agents`` lists some (other keys are left to the method, which names them)."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, dict):
        agent, agents = value.get("agent"), value.get("agents")
        if agent is not None and (not isinstance(agent, str) or not agent):
            raise PydanticCustomError(
                _OURS, "its agent must be an agent id, got {got}", {"got": _shown(agent)}
            )
        if agents is not None and not (
            isinstance(agents, list) and all(isinstance(a, str) and a for a in agents)
        ):
            raise PydanticCustomError(
                _OURS, "its agents must be a list of agent ids, got {got}", {"got": _shown(agents)}
            )
        return value
    raise PydanticCustomError(
        _OURS,
        "must be an agent id or an address object (agent: id, or agents: [ids]), got {got}",
        {"got": _shown(value)},
    )


class MapSend(Params):
    """``map/send``: ``to`` an agent id or address; ``payload`` any JSON value (to the
    swarm: a ``POST /message`` body, checked as one, or what becomes its ``body``)."""

    to: Annotated[Any, BeforeValidator(_address)] = None
    payload: Any = None
    meta: SendMeta | None = None


#: every method's params model, by JSON-RPC method name
PARAMS: dict[str, type[Params]] = {
    "map/connect": MapConnect,
    "map/authenticate": MapAuthenticate,
    "map/disconnect": MapDisconnect,
    "map/subscribe": MapSubscribe,
    "map/unsubscribe": MapUnsubscribe,
    "map/replay": MapReplay,
    "map/send": MapSend,
    "mail/create": MailCreate,
    "mail/get": MailGet,
    "mail/list": MailList,
    "mail/close": MailClose,
    "mail/join": MailJoin,
    "mail/leave": MailLeave,
    "mail/invite": MailInvite,
    "mail/turn": MailTurn,
    "mail/turns/list": MailTurnsList,
    "mail/thread/create": MailThreadCreate,
    "mail/thread/list": MailThreadList,
    "mail/summary": MailSummary,
    "mail/replay": MailReplay,
    "x-mail/turn/redact": TurnRedact,
}


P = TypeVar("P", bound=Params)


def check_params(model: type[P], params: object) -> P:
    """``params`` checked by ``model``: every string is storable text, every field of the
    right type and value. Raises
    :class:`~mail.conversations._access.InvalidParamsError` naming what is wrong (see the
    module docstring)."""
    if not isinstance(params, dict):
        raise InvalidParamsError(f"params: must be an object, got {_shown(params)}")
    bad = find_bad_text(params, "params")
    if bad is not None:
        where, problem = bad
        raise InvalidParamsError(f"{where}: {problem}", field=where.partition(".")[2])
    try:
        return model.model_validate(params)
    except ValidationError as e:
        found = problems(e)
        raise InvalidParamsError(describe(found, "params"), field=found[0][0]) from None


def parse_params(method: str, params: object) -> Params:
    """``params`` of ``method`` (a key of :data:`PARAMS`) checked by its model
    (:func:`check_params`); ``KeyError`` for a method without one."""
    return check_params(PARAMS[method], params)


def problems(error: ValidationError) -> list[tuple[str, str]]:
    """A validation's errors as ``(path, problem)``: ``("filter.status[0]", "must be
    'active' or ..., got 5")``."""
    return [(_path(details["loc"]), _problem(details)) for details in error.errors()]


def describe(found: Iterable[tuple[str, str]], prefix: str) -> str:
    """``(path, problem)`` pairs as one message: ``prefix.path: problem; ...``."""
    return "; ".join(
        f"{prefix}.{path}: {problem}" if path else f"{prefix}: {problem}" for path, problem in found
    )


def _path(loc: Iterable[str | int]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path.removeprefix(".")


#: pydantic's error types -> what the value must be
_MUST_BE: dict[str, str] = {
    "string_type": "a string",
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "list_type": "a list",
    "finite_number": "a finite number",
}


def _problem(error: ErrorDetails) -> str:
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    if kind == _OURS:
        return error["msg"]
    if kind == "value_error":  # a validator's own words
        return str(ctx.get("error", error["msg"]))
    if kind == "missing":
        return "is required"
    if kind == "literal_error":
        return f"must be {ctx['expected']}, got {_shown(value)}"
    if kind in ("greater_than_equal", "greater_than"):
        bound = ctx.get("ge", ctx.get("gt"))
        return f"must be an integer of at least {bound}, got {_shown(value)}"
    if kind in _MUST_BE:
        return f"must be {_MUST_BE[kind]}, got {_shown(value)}"
    return f"{error['msg']}, got {_shown(value)}"


_SHOWN = 40  # characters of a value an error shows


def _shown(value: Any) -> str:
    """A JSON value as an error shows it: scalars as they are (short), others by kind."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        text = repr(value)
        return text if len(text) <= _SHOWN else f"a number of {len(text)} digits"
    if isinstance(value, str):
        return repr(value) if len(value) <= _SHOWN else f"a string of {len(value)} characters"
    if isinstance(value, list | tuple):
        return "a list"
    return "an object"
