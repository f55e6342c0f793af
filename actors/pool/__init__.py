"""Actors on a shared pool of worker threads (``PooledActor``) instead of a thread each."""

from actors.pool.pooled_actor import ACTOR_POOL, MAX_IDLE_WORKERS, PooledActor, PooledFuture
from actors.pool.worker_pool import Ticket, WorkerPool, release_here

__all__ = [
    "ACTOR_POOL",
    "MAX_IDLE_WORKERS",
    "PooledActor",
    "PooledFuture",
    "Ticket",
    "WorkerPool",
    "release_here",
]
