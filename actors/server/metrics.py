"""The server's Prometheus metrics: one registry per server (tests start several in a process),
fed by the facts the recorders and the store's group commit already hear.

Nothing here counts on a path of its own: the CallRecorderActor tells ``call_attempted`` and
``call_ended`` (``actors.protocols.metrics``), the RunEventRecorderActor ``run_started`` and
``run_ended``, the group commit every COMMIT's duration. Each is a counter increment or a
histogram observation, no IO. The estimated cost is read at scrape time by the dashboard's own
rule (``store.call_stats.period_cost``): one query per scrape, none per call.

Names, labels and buckets (docs/choices.md says why): every family is ``cursor_server_*``;
``model`` is the public model id (as the call records and the dashboard name it), never a
provider's display name or key; ``provider_type`` the wire format. No family above carries a
user: each user's totals are families of their own (``cursor_server_user_*``), read from the
store at scrape time by the People page's rule and shown only while the observability
setting ``metrics_per_user`` is on, so the families above keep their cardinality whatever the
team's size, and those stay bounded by ``MAX_METRIC_USERS``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import peewee
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector

from store.base.clock import now_ms
from store.call_stats import PeriodCost, TokenCounts, period_cost
from store.catalog import get_observability
from store.llm_calls import CallEnd
from store.people_stats import PeriodPeople, Person, period_people
from wire.drift_tally import DriftRow
from wire.log import log_event

logger = logging.getLogger("cursor_server.metrics")

CONTENT_TYPE = CONTENT_TYPE_LATEST
# The time to first token: a fast local model answers in tens of ms, a reasoning model may
# think for minutes before its first visible delta.
TTFT_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0)
# A whole attempt: bounded by CURSOR_PROVIDER_TIMEOUT_SECONDS (300 s by default).
DURATION_BUCKETS = (0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 600.0)
# One COMMIT of a group (an fsync on SQLite, a round trip on PostgreSQL).
COMMIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
# Per period, the users with a series of their own (the most costly, as the People page orders
# them); the rest are summed in one more series under ``OTHER_USERS``, the empty value no user
# id can have (``wire.identity``: an id is never empty), so no claim can pose as the sum.
MAX_METRIC_USERS = 200
OTHER_USERS = ""
# The usage columns of a call record, by the ``kind`` label they are counted under.
TOKEN_KINDS = {
    "input_tokens": "input",
    "output_tokens": "output",
    "cache_read_tokens": "cache_read",
    "cache_write_tokens": "cache_write",
    "reasoning_tokens": "reasoning",
}


class ServerMetrics:
    """The registry and its instruments; implements ``MetricsPort``. ``cost``: the store's
    cost for the scrape (None: no store, no cost families)."""

    def __init__(
        self,
        cost: Callable[[], PeriodCost] | None = None,
        drift: Callable[[], list[DriftRow]] | None = None,
        people: Callable[[], PeriodPeople | None] | None = None,
    ) -> None:
        """``drift``: this process's protocol drift counts, read at scrape time; ``people``:
        each user's totals from the store, None while the setting is off."""
        self.registry = registry = CollectorRegistry()
        call_labels = ("provider_type", "model")
        self._runs = Counter(
            "cursor_server_runs",
            "Agent runs ended, by mode and EndStream code (ok on success).",
            ("mode", "code"),
            registry=registry,
        )
        self._turns = Counter(
            "cursor_server_turns",
            "Agent turns started (runs that are not a resume), by mode.",
            ("mode",),
            registry=registry,
        )
        self._active = Gauge(
            "cursor_server_active_runs",
            "Agent runs in progress, by mode.",
            ("mode",),
            registry=registry,
        )
        self._calls = Counter(
            "cursor_server_provider_calls",
            "Provider call attempts ended, by provider type, model (public id) and status.",
            (*call_labels, "status"),
            registry=registry,
        )
        self._ttft = Histogram(
            "cursor_server_provider_ttft_seconds",
            "Time from an attempt's request to its first text or thinking delta.",
            call_labels,
            buckets=TTFT_BUCKETS,
            registry=registry,
        )
        self._duration = Histogram(
            "cursor_server_provider_call_duration_seconds",
            "Duration of a provider call attempt, whatever its end.",
            call_labels,
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self._tokens = Counter(
            "cursor_server_provider_tokens",
            "Tokens as providers reported them, by kind (input includes cached input for the "
            "OpenAI formats; output includes reasoning).",
            (*call_labels, "kind"),
            registry=registry,
        )
        self._retries = Counter(
            "cursor_server_provider_retries",
            "Provider call attempts after the first on the same model.",
            call_labels,
            registry=registry,
        )
        self._fallbacks = Counter(
            "cursor_server_provider_fallbacks",
            "Provider calls moved to a fallback model (labels: the fallback's).",
            call_labels,
            registry=registry,
        )
        self._commit = Histogram(
            "cursor_server_store_commit_seconds",
            "Duration of one group COMMIT of the store's write transactions.",
            buckets=COMMIT_BUCKETS,
            registry=registry,
        )
        if cost is not None:
            registry.register(_CostCollector(cost))
        if drift is not None:
            registry.register(_DriftCollector(drift))
        if people is not None:
            registry.register(PeopleCollector(people))

    # ---- MetricsPort ----

    def call_attempted(
        self, provider_type: str, model: str, attempt: int, chain_position: int
    ) -> None:
        if attempt > 1:
            self._retries.labels(provider_type, model).inc()
        elif chain_position > 0:
            self._fallbacks.labels(provider_type, model).inc()

    def call_ended(self, provider_type: str, model: str, end: CallEnd) -> None:
        self._calls.labels(provider_type, model, end.status.value).inc()
        self._duration.labels(provider_type, model).observe(end.duration_ms / 1000)
        if end.ttft_ms is not None:
            self._ttft.labels(provider_type, model).observe(end.ttft_ms / 1000)
        for column, count in end.usage.items():
            kind = TOKEN_KINDS.get(column)
            if kind is not None and count > 0:
                self._tokens.labels(provider_type, model, kind).inc(count)

    def run_started(self, mode: str, resumed: bool) -> None:
        self._active.labels(mode).inc()
        if not resumed:
            self._turns.labels(mode).inc()

    def run_ended(self, mode: str, code: str) -> None:
        self._active.labels(mode).dec()
        self._runs.labels(mode, code).inc()

    # ---- the store ----

    def commit_observed(self, seconds: float) -> None:
        """A group COMMIT took ``seconds`` (told by ``store.group_commit``)."""
        self._commit.observe(seconds)

    # ---- the scrape ----

    def render(self) -> bytes:
        """The text format of every family (may query the store: call it off the loop)."""
        return generate_latest(self.registry)


class _CostCollector(Collector):
    """The estimated cost, read at scrape time: a gauge, because the dashboard's rule prices
    history at today's prices (a price change moves it both ways)."""

    def __init__(self, cost: Callable[[], PeriodCost]) -> None:
        self._cost = cost

    def collect(self) -> Iterator[Metric]:
        try:
            cost = self._cost()
        except peewee.DatabaseError as exc:
            # A scrape still answers the in-memory families; the cost is absent, not 0.
            log_event(logger, logging.WARNING, "metrics: reading the cost failed", error=str(exc))
            return
        usd = GaugeMetricFamily(
            "cursor_server_estimated_cost_usd",
            "Estimated USD of the calls started in the period (UTC) at the models' current "
            "prices, over every instance on the database; only calls of known cost.",
            labels=("period", "model"),
        )
        unknown = GaugeMetricFamily(
            "cursor_server_unknown_cost_calls",
            "Calls answered 2xx in the period whose cost is unknown (no usage or no price).",
            labels=("period", "model"),
        )
        for period, models in (("today", cost.today), ("month", cost.month)):
            for model, entry in sorted(models.items()):
                if entry.usd is not None:
                    usd.add_metric((period, model), entry.usd)
                unknown.add_metric((period, model), entry.unknown_cost_calls)
        yield usd
        yield unknown


def _bounded(people: list[Person], limit: int) -> list[Person]:
    """``people`` (most costly first) cut to ``limit`` users, the rest summed as one more."""
    if len(people) <= limit:
        return people
    kept, rest = people[:limit], people[limit:]
    priced = [p.cost_usd for p in rest if p.cost_usd is not None]
    tokens = TokenCounts(
        *(sum(getattr(p.tokens, kind) for p in rest) for kind in TokenCounts.__struct_fields__)
    )
    other = Person(
        user_id=OTHER_USERS,
        runs=sum(p.runs for p in rest),
        calls=sum(p.calls for p in rest),
        errors=sum(p.errors for p in rest),
        tokens=tokens,
        cost_usd=sum(priced) if priced else None,
        priced_calls=sum(p.priced_calls for p in rest),
        unknown_cost_calls=sum(p.unknown_cost_calls for p in rest),
    )
    return [*kept, other]


class PeopleCollector(Collector):
    """Each user's totals today and this month (UTC), as the People page counts them, over
    every instance on the database: gauges, as the cost is (a period starts again at 0).
    ``read`` answers None while the setting is off: no ``cursor_server_user_*`` family then."""

    def __init__(
        self, read: Callable[[], PeriodPeople | None], limit: int = MAX_METRIC_USERS
    ) -> None:
        self._read = read
        self._limit = limit

    def collect(self) -> Iterator[Metric]:
        try:
            totals = self._read()
        except peewee.DatabaseError as exc:
            log_event(logger, logging.WARNING, "metrics: reading users failed", error=str(exc))
            return
        if totals is None:
            return
        labels = ("period", "user")

        def gauge(name: str, text: str, *extra: str) -> GaugeMetricFamily:
            return GaugeMetricFamily(f"cursor_server_user_{name}", text, labels=(*labels, *extra))

        runs = gauge("runs", "Agent runs the user started in the period.")
        calls = gauge("provider_calls", "Provider call attempts of the user's runs.")
        errors = gauge("provider_call_errors", "Provider call attempts that failed.")
        tokens = gauge("tokens", "Tokens of the user's calls, by kind.", "kind")
        usd = gauge("estimated_cost_usd", "Estimated USD of the user's calls of known cost.")
        unknown = gauge("unknown_cost_calls", "The user's 2xx calls whose cost is unknown.")
        for period, people in (("today", totals.today), ("month", totals.month)):
            for person in _bounded(people, self._limit):
                key = (period, person.user_id)
                runs.add_metric(key, person.runs)
                calls.add_metric(key, person.calls)
                errors.add_metric(key, person.errors)
                for kind in TokenCounts.__struct_fields__:
                    tokens.add_metric((*key, kind), getattr(person.tokens, kind))
                if person.cost_usd is not None:
                    usd.add_metric(key, person.cost_usd)
                unknown.add_metric(key, person.unknown_cost_calls)
        yield from (runs, calls, errors, tokens, usd, unknown)


class _DriftCollector(Collector):
    """What Cursor sent that is not known here, and the RPC paths relayed because they are not
    served, as this process counted them (``wire.http.protocol_drift``; bounded in kinds, so in
    series). Per instance, as every counter here: sum them across instances."""

    def __init__(self, rows: Callable[[], list[DriftRow]]) -> None:
        self._rows = rows

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "cursor_server_protocol_drift",
            "Sightings of what this server does not know: kind field (name: the field number, "
            "value: its wire type), enum (name: the field, value: the number) or path (name: "
            "the RPC path relayed because it is not served), by message type and client version.",
            labels=("kind", "message_type", "name", "value", "client_version"),
        )
        for row in self._rows():
            labels = (row.kind, row.message_type, row.name, str(row.value), row.client_version)
            family.add_metric(labels, row.count)
        yield family


def store_cost(database: peewee.Database) -> Callable[[], PeriodCost]:
    """The cost of today and this month from ``database``, read when called."""
    return lambda: period_cost(database, now_ms())


def store_people(database: peewee.Database) -> Callable[[], PeriodPeople | None]:
    """Each user's totals today and this month from ``database`` while its setting is on."""

    def read() -> PeriodPeople | None:
        if not get_observability(database).metrics_per_user:
            return None
        return period_people(database, now_ms())

    return read
