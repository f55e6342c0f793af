"""Which model a RunRequest runs on: Cursor's selection resolved to a provider route.

Cursor names the model by the public id it got from our catalog (``wire.model_catalog``), by
Auto, or by one of its own ids the routing settings map to one of ours (``wire.model_routing``),
and may add parameters (``{id, value}`` pairs) and reasoning switches. Reading those is pure
(:func:`read_selection`); so is merging them with the stored model (:func:`build_route`). The
store reads happen in :class:`StoreModelResolver`, which is what the SessionActor calls.

Every failure is a :class:`ModelSelectionError` carrying the Connect error that ends the run:
``invalid_argument`` when the request itself is wrong (no model, a bad parameter),
``unavailable`` with ErrorDetails when the model is not one this server can run (Cursor then
shows a server error naming it), ``internal`` when the store fails.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import msgspec
import peewee

from actors.conversation.request import NO_EFFORT, ModelRoute, ProviderType, Reasoning, RouteKey
from actors.conversation.secret import Secret
from actors.run.fallback_routes import fallback_routes
from actors.run.selection_error import ModelSelectionError
from store.catalog import (
    REASONING_EFFORTS,
    KeyUnreadable,
    ModelRecord,
    ProviderConnection,
    get_routing,
    has_model,
    model_ids,
    model_route_parts,
)
from wire.errors import Code, ConnectError, protocol_error, provider_error_detail
from wire.model_routing import (
    NO_MODEL,
    PUBLIC_ID,
    OurModel,
    Relay,
    Routing,
    is_auto,
    model_head,
    requested_model_id,
    route_model,
)
from wire.proto import agent_v1_pb2 as agent

# What the SessionActor is given: resolve a RunRequest's model or raise ModelSelectionError.
ModelResolver = Callable[[agent.AgentRunRequest], ModelRoute]

_BOOLEANS = {"true": True, "false": False}
_CONTEXT = re.compile(r"([0-9]+)([km]?)", re.IGNORECASE)
_CONTEXT_SCALE = {"": 1, "k": 1_000, "m": 1_000_000}


class Selection(msgspec.Struct, frozen=True):
    """What the RunRequest asks for, before the store is consulted.

    ``effort_set`` tells an explicit ``effort``/``reasoning`` parameter (``none`` asks for no
    reasoning) from no parameter, or an empty one, at all (the stored default applies).
    """

    public_id: str
    reasoning: bool = False
    effort: str | None = None
    effort_set: bool = False
    fast: bool = False
    context_tokens: int | None = None
    # Cursor named one of its own models or Auto, and the routing settings chose ours: its
    # parameters were meant for its model, so an unknown one or an effort our model's format
    # does not take is dropped (the stored setting applies), never the run's error.
    routed: bool = False


def _invalid(message: str) -> ModelSelectionError:
    return ModelSelectionError(protocol_error(message))


def _unavailable(message: str) -> ModelSelectionError:
    text = f"provider error: {message}"
    return ModelSelectionError(ConnectError(Code.UNAVAILABLE, text, (provider_error_detail(text),)))


def _boolean(parameter: str, value: str) -> bool:
    try:
        return _BOOLEANS[value]
    except KeyError:
        raise _invalid(
            f"Cursor model parameter {parameter} must be true or false, got {value!r}"
        ) from None


def parse_context_tokens(value: str) -> int:
    """``128000``, ``272k`` (x1000) or ``1m`` (x1 000 000) as a positive token count."""
    match = _CONTEXT.fullmatch(value.strip())
    tokens = int(match[1]) * _CONTEXT_SCALE[match[2].lower()] if match else 0
    if tokens <= 0:
        raise _invalid(
            "Cursor model parameter context must be a positive token count such as "
            f"128000, 272k or 1m, got {value!r}"
        )
    return tokens


def selected_model_id(request: agent.AgentRunRequest) -> str:
    """``requested_model.model_id``, else ``model_details.model_id``; one must be non-empty."""
    model_id = requested_model_id(request)
    if not model_id:
        raise _invalid("Cursor Run does not select a model")
    return model_id


# A CLI names a model as ``<id>/<reasoning>/<context>/fast``, each part after the id optional
# from the right; the parts read as these parameters, in this order.
_SUFFIX_PARAMETERS = ("reasoning", "context", "fast")


def model_id_suffixes(model_id: str) -> tuple[str, list[tuple[str, str]]]:
    """The public id and the parameters its suffixes stand for (an empty part: none)."""
    public_id, *suffixes = model_id.split("/")
    if len(suffixes) > len(_SUFFIX_PARAMETERS):
        raise _invalid(
            f"model id {model_id!r} has {len(suffixes)} suffixes; at most "
            "<id>/<reasoning>/<context>/fast"
        )
    parameters: list[tuple[str, str]] = []
    for name, value in zip(_SUFFIX_PARAMETERS, suffixes, strict=False):
        if name == "fast":
            if value != "fast":
                raise _invalid(
                    f"model id {model_id!r}: its fourth part can only be 'fast', got {value!r}"
                )
            parameters.append(("fast", "true"))
        elif value:
            parameters.append((name, value))
    return public_id, parameters


def read_selection(request: agent.AgentRunRequest, public_id: str | None = None) -> Selection:
    """The model id, parameters and reasoning switches of a RunRequest; pure. ``public_id``:
    the model the routing settings chose for the asked id (whose suffixes still apply);
    without it the asked id must be a public id itself.

    Parameters apply in the order sent (a repeated id: the last one wins). Reasoning is asked
    for by ``max_mode`` (on either message), ``thinking_details`` on ModelDetails,
    ``thinking=true`` or any effort; ``thinking=false`` asks for nothing and so does not
    switch off reasoning the stored model enables.
    """
    asked = selected_model_id(request) if public_id is None else requested_model_id(request)
    head, suffixed = model_id_suffixes(asked)
    routed = not PUBLIC_ID.fullmatch(head)
    public_id = head if public_id is None else public_id
    requested = request.requested_model
    details = request.model_details
    reasoning = (
        requested.max_mode
        or (details.HasField("max_mode") and details.max_mode)
        or details.HasField("thinking_details")
    )
    effort: str | None = None
    effort_set = fast = False
    context_tokens: int | None = None
    # The id's suffixes first, so a parameter sent explicitly wins over them.
    pairs = [*suffixed, *((p.id, p.value) for p in requested.parameters)]
    for parameter_id, parameter_value in pairs:
        match parameter_id:
            case "effort" | "reasoning":
                # An empty value is no parameter: the stored default stays.
                if value := parameter_value.strip().lower():
                    effort_set = True
                    effort = value
            case "thinking":
                reasoning = _boolean(parameter_id, parameter_value) or reasoning
            case "fast":
                fast = _boolean(parameter_id, parameter_value)
            case "context":
                context_tokens = parse_context_tokens(parameter_value)
            case _ if routed:
                pass  # one of Cursor's own model's parameters: not ours to refuse
            case _:
                raise _invalid(f"unsupported Cursor model parameter: {parameter_id!r}")
    return Selection(
        public_id=public_id,
        reasoning=reasoning or effort not in (None, NO_EFFORT),
        effort=effort,
        effort_set=effort_set,
        fast=fast,
        context_tokens=context_tokens,
        routed=routed,
    )


def _narrower(stored: int | None, requested: int | None) -> int | None:
    """Cursor's ``context`` may narrow the configured window, never widen it past the model."""
    if stored is None or requested is None:
        return requested if stored is None else stored
    return min(stored, requested)


def build_route(
    selection: Selection, record: ModelRecord, provider: ProviderConnection
) -> ModelRoute:
    """The route for an enabled stored model with the request's settings applied; pure.

    Reasoning is on when the model enables it or the request asks for it; the request's
    effort replaces the stored default, and effort ``none`` turns reasoning off. An effort the
    provider's format does not take is refused here, never sent.
    """
    if not record.enabled:
        raise _unavailable(f"model {selection.public_id} ({record.display_name}) is disabled")
    return _route(selection, record, provider)


def stored_model_route(record: ModelRecord, provider: ProviderConnection) -> ModelRoute:
    """The route a run without Cursor parameters would take to ``record``, enabled or not;
    pure. The console tests a model with it (a disabled model is testable before it is
    enabled); runs go through :func:`build_route`, which refuses a disabled model."""
    return _route(Selection(public_id=record.public_id), record, provider)


def _route(selection: Selection, record: ModelRecord, provider: ProviderConnection) -> ModelRoute:
    try:
        provider_type = ProviderType(provider.type)
    except ValueError:
        raise ModelSelectionError(
            ConnectError(
                Code.INTERNAL,
                f"store error: provider {provider.provider_id} has unsupported type "
                f"{provider.type!r}",
            )
        ) from None
    allowed = REASONING_EFFORTS[provider_type]
    if selection.effort_set and not (selection.routed and selection.effort not in allowed):
        effort = selection.effort
        if effort not in allowed:
            raise _invalid(
                f"Cursor's effort parameter {effort!r} is not one {provider.type} takes for "
                f"model {selection.public_id}: use one of {', '.join(allowed)}"
            )
    else:
        # Saved before efforts were checked (free text then): the case is forgiven, a value
        # the format does not take is the user's to fix, never sent.
        stored = record.reasoning_effort
        effort = None if stored is None else stored.strip().lower() or None
        if effort is not None and effort not in allowed:
            raise ModelSelectionError(
                ConnectError(
                    Code.FAILED_PRECONDITION,
                    f"model {selection.public_id} ({record.display_name}) has the stored "
                    f"reasoning effort {stored!r}, which {provider.type} does not take: save "
                    f"the model again with one of {', '.join(allowed)} or none",
                )
            )
    return ModelRoute(
        provider_id=provider.provider_id,
        provider_name=provider.name,
        provider_type=provider_type,
        base_url=provider.base_url,
        api_key=Secret(provider.api_key),
        headers=tuple(provider.headers.items()),
        public_id=record.public_id,
        model_id=record.model_id,
        display_name=record.display_name,
        max_output_tokens=record.max_output_tokens,
        context_window_tokens=_narrower(record.context_window_tokens, selection.context_tokens),
        reasoning=Reasoning(
            enabled=effort != NO_EFFORT and (record.reasoning_enabled or selection.reasoning),
            effort=effort,
        ),
        fast=selection.fast,
        replay_reasoning=provider.replay_reasoning,
        prompt_cache_key=provider.sends_prompt_cache_key,
        public_headers=provider.public_headers,
        keys=tuple(RouteKey(k.key_id, k.label, Secret(k.api_key)) for k in provider.keys),
    )


def stored_routing(database: peewee.Database) -> Routing:
    """The store's routing settings as ``wire.model_routing`` reads them (the same shape)."""
    return msgspec.convert(msgspec.to_builtins(get_routing(database)), type=Routing)


def load_routing(database: peewee.Database) -> tuple[Routing, tuple[OurModel, ...]]:
    """The routing settings and every model's id (catalog order), as the decision reads them
    (``wire.model_routing.route_model``); two reads, on the calling thread."""
    return stored_routing(database), tuple(
        OurModel(public_id, enabled) for public_id, enabled in model_ids(database)
    )


def routed_model(database: peewee.Database, asked: str) -> str | Relay:
    """Where a run asking for ``asked`` runs (``route_model`` over the store's settings). An
    id that is one of ours is the rule's first answer, so it is looked up alone (one read, on
    the path of every run of a model picked from the list); anything else reads the settings
    and every model's id."""
    head = model_head(asked)
    if PUBLIC_ID.fullmatch(head) and has_model(database, head):
        return head
    return route_model(asked, *load_routing(database))


def _not_served(asked: str) -> ModelSelectionError:
    """The run reached us, but its id names none of our models (the edge relays such a run;
    this is a settings change between the two, or a server without the relay)."""
    if is_auto(asked):
        return _unavailable(
            "Cursor asked for Auto, which no model of this server takes: enable a model, or "
            "choose one under Settings > Routing in the console"
        )
    return _unavailable(
        f"unknown model: {model_head(asked)} (no model with this id is configured on this "
        "server; add it in the console, or map the id under Settings > Routing)"
    )


class StoreModelResolver:
    """Resolves a RunRequest's model against the store; called on the SessionActor's thread.

    The asked id goes through the routing settings (``wire.model_routing``) first, as at the
    edge; the route carries the id Cursor sent (``asked_model_id``)."""

    def __init__(self, database: peewee.Database) -> None:
        self._database = database

    def __call__(self, request: agent.AgentRunRequest) -> ModelRoute:
        asked = requested_model_id(request)
        # The parameters first: a bad one is the request's error, whatever the model.
        selection = read_selection(request, model_head(asked))
        try:
            target = routed_model(self._database, asked)
            if target is NO_MODEL:
                raise _invalid("Cursor Run does not select a model")
            if isinstance(target, Relay):
                raise _not_served(asked)
            selection = msgspec.structs.replace(selection, public_id=target)
            parts = model_route_parts(self._database, selection.public_id)
        except peewee.DatabaseError as exc:
            raise ModelSelectionError(ConnectError(Code.INTERNAL, f"store error: {exc}")) from exc
        except KeyUnreadable as exc:
            # A database copied without its key file: the user must set the key again.
            raise _unavailable(exc.message) from None
        if parts is None:
            raise _not_served(asked)
        record = parts[0]
        if not record.enabled and model_head(asked) != record.public_id:
            raise _unavailable(
                f"model {record.public_id} ({record.display_name}) is disabled; Cursor asked "
                f"for {asked or 'Auto'!r}, which the routing settings send to it"
            )
        route = build_route(selection, *parts)
        try:
            fallbacks = fallback_routes(self._database, record, stored_model_route)
        except peewee.DatabaseError as exc:
            raise ModelSelectionError(ConnectError(Code.INTERNAL, f"store error: {exc}")) from exc
        # Each fallback answers for the same asked id: its records name what Cursor asked for.
        fallbacks = tuple(msgspec.structs.replace(f, asked_model_id=asked) for f in fallbacks)
        return msgspec.structs.replace(route, asked_model_id=asked, fallbacks=fallbacks)


__all__ = [
    "ModelResolver",
    "ModelSelectionError",
    "Selection",
    "StoreModelResolver",
    "build_route",
    "load_routing",
    "parse_context_tokens",
    "read_selection",
    "routed_model",
    "selected_model_id",
    "stored_model_route",
    "stored_routing",
]
