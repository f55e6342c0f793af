"""The start of a run that makes no agent turn (``ShellCommandRun``, ``SummarizeRun``): the
base is found as a turn finds it (the checkpoint index, else the state's roots fetched and
imported; no state: the conversation's head), then the conversation is claimed there
(``BaseClaim``). ``ClaimingRun`` drives that start for such a run; what the run does on its
base (``_open``) is its own.
"""

from __future__ import annotations

import msgspec

from actors.conversation.events import Usage
from actors.conversation.model import CanonicalMessage
from actors.protocols.blob_sync import BlobFetched
from actors.run.base import RunBase
from actors.run.children import RunChildren
from actors.run.core import RunCore, RunSetup
from actors.run.start import stored_pre_fetched, took_over
from actors.turn import timeline
from actors.turn.plan import BaseFetch, TurnPlan, plan_turn, wanted_blobs
from store.base.clock import now_ms
from store.conversations import ConversationStore
from wire.errors import ConnectError


class _Fetching(msgspec.Struct, frozen=True):
    """What the start knows while the base's blobs are fetched."""

    plan: TurnPlan
    base: RunBase
    indexed: int | None  # the checkpoint index's revision for the client's roots
    fetch: BaseFetch


class ClaimedBase(msgspec.Struct, frozen=True):
    """The run owns its conversation at ``head``, whose history is ``messages``."""

    plan: TurnPlan
    head: int
    messages: tuple[CanonicalMessage, ...]


class BaseClaim:
    """One run's base-finding: ``start``, then ``receive`` each fetched blob until it says the
    base is in, then ``claim``. Every failure raises (the run ends with it)."""

    def __init__(self, setup: RunSetup, store: ConversationStore, children: RunChildren) -> None:
        self._request_id = setup.request_id
        self._request = setup.request
        self._model = setup.route.public_id  # for the start's log line
        self._user_id = setup.route.user_id
        self._deps = setup.deps
        self._store = store
        self._children = children
        self._self = setup.self_ref
        self._fetching: _Fetching | None = None
        self.claimed = False  # the store made this run the conversation's active run

    def start(self, plan: TurnPlan) -> bool:
        """Store the request's blobs, start the blob sync and fetch what the base needs; True
        when nothing is left to fetch."""
        have = stored_pre_fetched(self._deps, self._request)
        self._children.start_blob_sync()
        base = RunBase(self._store, self._deps.histories, self._request_id, plan, self._user_id)
        indexed = base.indexed_base()
        fetch = BaseFetch(wanted_blobs(plan, roots_indexed=indexed is not None), have)
        self._children.fetch(fetch.requests())
        self._fetching = _Fetching(plan, base, indexed, fetch)
        return fetch.done

    @property
    def plan(self) -> TurnPlan:
        """The run's plan, while its base is being found."""
        assert self._fetching is not None
        return self._fetching.plan

    def receive(self, message: BlobFetched) -> bool:
        """A fetched blob; True once every blob of the base is in (False: others are still
        being fetched, or nothing is, or it is not one of ours)."""
        return self._fetching is not None and self._fetching.fetch.receive(message)

    def claim(self) -> ClaimedBase:
        """Read the base revision, claim the conversation there, then read its history."""
        assert self._fetching is not None
        known, self._fetching = self._fetching, None
        plan = known.plan
        revision = known.base.base_revision(known.indexed, known.fetch.fetched)
        if revision is None:
            revision = self._store.ensure_conversation(plan.conversation_id)
        claimed = self._store.claim_run(
            self._request_id, plan.conversation_id, revision, known.base.user_id
        )
        self.claimed = True
        took_over(self._deps, self._self, plan, claimed, self._model, revision)
        return ClaimedBase(plan, revision, known.base.history(revision))


class ClaimingRun(RunCore):
    """A run that starts by finding and claiming its base: the kind checks its plan
    (``_planned``) and does its work once the base is in (``_open``)."""

    def __init__(self, setup: RunSetup) -> None:
        super().__init__(setup)
        self._base = BaseClaim(setup, self._store, self._children)
        self._usage: Usage | None = None  # its model calls' (a shell command makes none)

    def start(self) -> None:
        self._guarded(self._start)

    def _start(self) -> None:
        self._children.record(
            timeline.run_started(
                self._request, self._route.public_id, now_ms(), self._route.asked_model_id
            )
        )
        plan = plan_turn(self.request_id, self._request)
        self._planned(plan)
        if self._base.start(plan):
            self._open()

    def on_blob_fetched(self, message: BlobFetched) -> None:
        if not self._ending.started:
            self._guarded(lambda: self._on_blob(message))

    def _on_blob(self, message: BlobFetched) -> None:
        if self._base.receive(message):
            self._open()  # every blob of the base is in

    def _planned(self, plan: TurnPlan) -> None:
        """Check the plan is this kind's, before anything is fetched (raise if not)."""
        raise NotImplementedError(f"{type(self).__name__} defines no _planned")

    def _open(self) -> None:
        """The run's work, once every blob of its base is in."""
        raise NotImplementedError(f"{type(self).__name__} defines no _open")

    def _finish(self, error: ConnectError | None) -> None:
        self._ending.finish(error, claimed=self._base.claimed, usage=self._usage)
