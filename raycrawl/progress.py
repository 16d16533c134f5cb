"""Live progress, shaped for where the crawl runs:

- a Ray job (``ray job submit``): a ``tqdm_ray`` bar, which Ray's driver-side bar manager renders without
  tearing the job's log (it also routes ``print`` around the bar), plus a plain line every ``LOG_EVERY`` s;
- a Jupyter notebook: ``tqdm.auto`` (a widget bar when ipywidgets is there, text otherwise);
- a terminal: a ``tqdm`` bar on stderr;
- anything else (output piped to a file): a plain line every ``LOG_EVERY`` s, never a carriage return.

All show pages and pages/s, queued, in flight, hosts ready and paused, and errors; ``--quiet`` shows nothing.
Warnings (a checkpoint that failed) are printed above the bar, once each.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from raycrawl.core.records import FETCH_OUTCOMES

LOG_EVERY = 10.0
RAY_JOB_ENV = "RAY_JOB_CONFIG_JSON_ENV_VAR"  # set by Ray for every job driver (job_supervisor.py)


def in_notebook() -> bool:
    ipython = sys.modules.get("IPython")  # loaded already in any Jupyter kernel; never imported here
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def in_ray_job() -> bool:
    return RAY_JOB_ENV in os.environ


def tasks_text(status: dict[str, Any]) -> str:
    """Fetch tasks as running/wanted/ceiling (demand: core/demand.py), and CPUs asked of an autoscaler if any."""
    demand = status.get("demand") or {}
    text = f"{demand.get('tasks_running', status.get('tasks_in_flight', 0))}"
    if demand:
        text += f"/{demand.get('tasks_wanted', 0)}/{demand.get('tasks_ceiling', 0)}"
        if demand.get("autoscaler"):
            text += f" ({demand.get('cpus_requested', 0)} CPUs asked, {demand.get('nodes', 0)} nodes)"
    return text


def harvest_text(status: dict[str, Any]) -> str:
    """``34% (last 100: 61%)``: since the start, and over the last pages (what a focused crawl's steering moves)."""
    overall = f"{status.get('harvest_rate', 0):.0%}"
    if "harvest_rate_recent" not in status:
        return overall
    return f"{overall} (last {status['harvest_window']}: {status['harvest_rate_recent']:.0%})"


def describe(status: dict[str, Any]) -> dict[str, Any]:
    """The numbers a bar shows as its postfix (the one rate shown)."""
    return {
        "pages/s": status.get("pages_per_s", 0),
        "queued": status.get("queued", 0),
        "in flight": status.get("leased", 0),
        "tasks": tasks_text(status),
        "hosts ready": status.get("hosts_ready", 0),
        "paused": status.get("hosts_paused", 0),
        "errors": status.get("errors", 0),
        # with an extractor: pages accepted, and the harvest rate (accepted per page fetched) overall and recently
        **({"accepted": status["accepted"], "harvest": harvest_text(status)} if "accepted" in status else {}),
        # a continuous crawl's: revisits waiting, and how overdue the most overdue page is
        **(
            {"scheduled": status["scheduled"], "lag": f"{status.get('freshness_lag_s', 0):.1f}s"}
            if "scheduled" in status
            else {}
        ),
    }


def status_line(status: dict[str, Any]) -> str:
    parts = "  ".join(f"{k} {v}" for k, v in describe(status).items())
    head = f"raycrawl: [{status.get('elapsed_s', 0):.0f}s] {status.get('state', '')}"
    return f"{head}: pages {status.get('pages', 0)}  {parts}"


class Progress:
    """Called with each status() dict while a crawl runs; close() at the end."""

    def __init__(self, quiet: bool = False, total: int | None = None) -> None:
        self.quiet = quiet
        self.total = total
        self._bar: Any = None
        self._mode = "quiet" if quiet else self._choose_mode()
        self._last_line = 0.0
        self._warned: str | None = None

    @staticmethod
    def _choose_mode() -> str:
        if in_ray_job():
            return "ray"
        if in_notebook():
            return "notebook"
        return "terminal" if sys.stderr.isatty() else "lines"

    @property
    def mode(self) -> str:
        return self._mode

    def _open(self) -> Any:
        if self._mode == "ray":
            from ray.experimental.tqdm_ray import tqdm as ray_tqdm

            return ray_tqdm(desc="raycrawl", total=self.total, unit="pages")
        if self._mode == "notebook":
            from tqdm.auto import tqdm as auto_tqdm

            return auto_tqdm(desc="raycrawl", total=self.total, unit="pages", bar_format=self._bar_format())
        from tqdm import tqdm as term_tqdm

        return term_tqdm(desc="raycrawl", total=self.total, unit="pages", file=sys.stderr, dynamic_ncols=True,
                         bar_format=self._bar_format())  # fmt: skip

    def _bar_format(self) -> str:
        """tqdm's own rate is left out: it counts from the bar's first update (a resumed crawl's thousands of pages
        at once read as "13428.93pages/s"), and the crawl's pages/s is in the postfix already."""
        if self.total:
            return "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} pages [{elapsed}{postfix}]"
        return "{desc}: {n_fmt} pages [{elapsed}{postfix}]"

    def warn(self, message: str) -> None:
        if self._bar is not None and self._mode != "ray":
            self._bar.write(f"raycrawl: warning: {message}", file=sys.stderr)
        else:
            print(f"raycrawl: warning: {message}", file=sys.stderr, flush=True)

    def __call__(self, status: dict[str, Any]) -> None:
        warning = status.get("checkpoint_error")
        if warning and warning != self._warned:
            self.warn(str(warning))
        self._warned = warning
        if self._mode == "quiet" or status.get("state") == "starting":
            return
        now = time.monotonic()
        if self._mode in ("lines", "ray") and now - self._last_line >= LOG_EVERY:
            self._last_line = now
            print(status_line(status), file=sys.stderr if self._mode == "lines" else sys.stdout, flush=True)
        if self._mode == "lines":
            return
        if self._bar is None:
            self._bar = self._open()
        pages = int(status.get("pages", 0))
        if self._mode == "ray":
            self._bar.update(pages - self._bar.n)  # tqdm_ray has no postfix: the log line carries the rest
        else:
            self._bar.n = pages
            self._bar.set_postfix(describe(status), refresh=False)
            self._bar.refresh()

    def close(self, final: dict[str, Any] | None = None) -> None:
        """End the display; with ``final`` (the crawl's last status or summary) its figures are the last shown."""
        if final is not None and self._mode != "quiet":
            pages = int(final.get("pages", _pages_of(final)))
            outcomes = final.get("outcomes", {})
            final = {"queued": final.get("left_queued", 0), "errors": outcomes.get("error", 0), **final}
            if self._mode == "lines":
                print(status_line({**final, "pages": pages, "state": "finished"}), file=sys.stderr, flush=True)
            elif self._bar is not None:
                if self._mode == "ray":
                    self._bar.update(pages - self._bar.n)
                else:
                    self._bar.n = pages
                    self._bar.set_postfix(describe(final), refresh=False)
                    self._bar.refresh()
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _pages_of(summary: dict[str, Any]) -> int:
    """Pages fetched, as a summary counts them (the status dict has "pages" itself)."""
    outcomes = summary.get("outcomes", {})
    return int(sum(outcomes.get(outcome, 0) for outcome in FETCH_OUTCOMES))
