"""How a crawl's coordinator begins (a part of actors/coordinator.py's ``Coordinator``, apart for size): a new
crawl's seeds and a recrawl's URLs, a --resume's checkpoint and dead letters to retry; and, for a coordinator Ray
made again after its process died, the record of its crew (actors/crew_registry.py) and the crew itself, alive or
made anew (the crawl is then picked up by coordinator_checkpoints.py ``pick_up``, not begun).
"""

from __future__ import annotations

import time
import warnings
from typing import TYPE_CHECKING

import ray

from raycrawl.actors import crew_registry
from raycrawl.actors.crew import Crew
from raycrawl.actors.placement import made_despite_losses
from raycrawl.adapters.output import page_parts
from raycrawl.core.dead_letters import BUDGET_OUTCOMES, QUARANTINED, RETRIED_OUTCOMES
from raycrawl.core.recrawl import recrawl_links

if TYPE_CHECKING:
    from raycrawl.actors.coordinator import Coordinator


def made_again() -> bool:
    """Whether Ray made this (coordinator) actor again after its process died."""
    with warnings.catch_warnings():  # (Ray's own property reads one it deprecated: its warning is not ours)
        warnings.simplefilter("ignore", DeprecationWarning)
        return bool(ray.get_runtime_context().was_current_actor_reconstructed)


def begin(c: Coordinator) -> None:
    """A crawl's start (or its --resume's): its seeds, a recrawl's URLs, dead letters to retry."""
    c.stats.started_at = c._started_at = time.time()  # (--time-limit and pages/s count crawling)
    c.crew.register(c._started_at)
    # (an earlier run of this crawl id may have left its stop there, its driver gone before end(): not this run's)
    with c._lock:
        crew_registry.note_operator(c.crawl_id, c.loop.operator_said())
    if c._resumed is not None:
        c.cuts.restore(c._resumed)
        if c._unwrapped_parts:
            c.stats.events["warc_parts_unwrapped"] += c._unwrapped_parts
    c.stats.seeds += len(c.seeds)
    c.crew.offer_seeds(c.seeds, c.cfg.tracking_params)
    if c._resumed is None and c.cfg.recrawl:
        offer_recrawl(c, c.cfg.recrawl)
    if c._resumed is not None and (c.cfg.retry_errors or c.cfg.retry_quarantined):
        outcomes = RETRIED_OUTCOMES if c.cfg.retry_errors else frozenset()
        retry_dead_letters(
            c,
            outcomes | (BUDGET_OUTCOMES if c.cfg.retry_budget else frozenset()),
            QUARANTINED if c.cfg.retry_quarantined else frozenset(),
        )


def offer_recrawl(c: Coordinator, source: str) -> None:
    """An earlier crawl's URLs, with what it learned of each, as seeds (its hosts join the scope), streamed to
    their shards one page part at a time: the coordinator never holds the earlier crawl. On a resume they are
    in the checkpoint already."""
    for records in page_parts(source, c.cfg.filesystem):
        links, known = recrawl_links(records)
        c._widen_scope(urls=[link[0] for link in links])
        c.stats.seeds += len(links)
        c.crew.offer_links(links, known)  # (one call per shard and part: the next part waits for it)


def retry_dead_letters(c: Coordinator, outcomes: frozenset[str], verdicts: frozenset[str] = frozenset()) -> None:
    """Take the URLs whose records ended in ``outcomes`` (or were judged ``verdicts``) out of the output and
    queue them again, with fresh attempts; their new records replace the old ones (core/dead_letters.py). The
    stats forget the old ones."""
    taken = c.output.take_dead_letters(c._sequence.next_epoch, outcomes, verdicts)
    c.crew.requeue(taken.entries, retry=True)
    c.stats.outcomes.subtract(taken.outcomes)
    c.stats.verdicts.subtract(taken.verdicts)
    c.stats.events["dead_letters_retried"] += len(taken.entries)


def restart_record(c: Coordinator) -> crew_registry.CrewRecord | None:
    """A restarted coordinator's crew record; a new crawl forgets an earlier one's of its id."""
    if not c.restarted:
        crew_registry.forget(c.crawl_id)
        return None
    return crew_registry.load(c.crawl_id)


def take_crew(c: Coordinator, record: crew_registry.CrewRecord | None) -> Crew:
    """A new crew; on a restart the one running if all of it is alive (``c.adopted``), else a new one."""
    renderers = c.render_pool.actors if c.render_pool is not None else []
    found = Crew.find(*c._crew_parts(), c._placement, renderers) if c.restarted else None
    c.adopted = found is not None
    if record is not None and found is None:
        crew_registry.kill(record)  # (what is left of it: a crew is made anew, from the last checkpoint)
    # (a crew's actor killed while it is made -- chaos, a node going -- must not fail this constructor: Ray never
    # makes again an actor whose constructor raised, and the crawl would end)
    return found or made_despite_losses(c._new_crew)
