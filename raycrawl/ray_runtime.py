"""Starting Ray for a crawl, or joining the cluster a crawl runs on: the only module that knows how Ray is
brought up (its ``_private`` switches included)."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from typing import Any

from raycrawl.errors import ConfigError, ServiceError
from raycrawl.ray_tuning import own_ray_system_config

SINGLE_MACHINE_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextlib.contextmanager
def loopback_only() -> Iterator[None]:
    """While our own Ray starts: Ray 2.60 swaps the 127.0.0.1 it is given for the machine's outward address, and
    its servers then listen on every interface. Its switch for single-machine Ray (``RAY_ENABLE_WINDOWS_OR_OSX_
    CLUSTER=0``) keeps 127.0.0.1: set for this process (Ray read it at import) and for the processes ``ray.init``
    starts (they inherit it), then put back, so that a later connection to a real cluster is not affected."""
    from ray._private import ray_constants

    saved_env, saved_flag = os.environ.get(SINGLE_MACHINE_SWITCH), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[SINGLE_MACHINE_SWITCH] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved_flag
        if saved_env is None:
            os.environ.pop(SINGLE_MACHINE_SWITCH, None)
        else:
            os.environ[SINGLE_MACHINE_SWITCH] = saved_env


def ensure_ray(address: str | None) -> None:
    import ray

    if ray.is_initialized():
        return
    options: dict[str, Any] = {}
    own = address is None and not os.environ.get("RAY_ADDRESS")
    if own:
        running = machine_cluster()
        if running is not None:  # (a `ray start` cluster is not joined unasked: say how to choose it)
            print(
                f"raycrawl: a Ray cluster started with `ray start` runs on this machine ({running}); this crawl "
                "starts a Ray of its own. To crawl on that cluster: --ray-address auto",
                file=sys.stderr,
            )
        # A Ray of our own: keep it on loopback (anyone who reaches Ray's ports can run code).
        options["_node_ip_address"] = "127.0.0.1"
        options["_system_config"] = own_ray_system_config(os.environ)
    # Ray turns token authentication on for a new local cluster and says so on every run, as a WARNING: a line a
    # raycrawl user can do nothing about (it is the safe default). Only that logger, only while starting.
    auth_log = logging.getLogger("ray._private.authentication.authentication_token_setup")
    level = auth_log.level
    auth_log.setLevel(logging.ERROR)
    try:
        with loopback_only() if own else contextlib.nullcontext():
            ray.init(
                # "local": a Ray of our own even when another runs on this machine (a bare None would join the
                # machine's "current" cluster, whoever started it).
                address="local" if own else address,
                include_dashboard=False,
                logging_level="WARNING",
                log_to_driver=False,  # worker chatter would garble the progress line; errors come back as values
                **options,
            )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = address or "a local Ray instance"
        raise ServiceError(f"cannot start or reach Ray at {where}: {exc}") from None
    finally:
        auth_log.setLevel(level)


def check_outlives_this_process(address: str | None) -> None:
    """A detached crawl needs a Ray that goes on when this process ends: one it joins, never one it starts (that one
    ends with it, and the crawl with it). Said before anything starts."""
    import ray

    joins = bool(address or os.environ.get("RAY_ADDRESS")) if not ray.is_initialized() else not _started_here()
    if not joins:
        raise ConfigError(
            "detach: a detached crawl runs on a Ray cluster that outlives this process, and this one would run on a "
            "Ray it starts itself (ended with it): start one with `ray start --head`, then give --ray-address "
            "(or RAY_ADDRESS)"
        )


def _started_here() -> bool:
    """Whether this process started the Ray it is connected to (``ray.init()`` with no cluster to join)."""
    from ray._private import worker

    node = worker._global_node
    return node is not None and bool(node.all_processes)  # (a node joined, not started, runs no process of its own)


def connect_ray(address: str | None) -> None:
    """Join the running Ray cluster at ``address`` (else RAY_ADDRESS, else the one this machine is part of) to reach
    a crawl there; never starts one."""
    import ray

    if ray.is_initialized():
        return
    target = address or os.environ.get("RAY_ADDRESS") or "auto"
    problem = _unreachable(target)
    if problem is not None:  # (ray.init would retry an address that does not answer for minutes)
        raise ServiceError(f"cannot reach a Ray cluster at {target}: {problem}")
    try:
        ray.init(address=target, namespace=None, logging_level="WARNING", log_to_driver=False)
    except Exception as exc:  # (ConnectionError, or Ray's own errors for an address it cannot use)
        raise ServiceError(f"cannot reach a Ray cluster at {target}: {_first_line(exc)}") from None


def machine_cluster() -> str | None:
    """The address of the cluster this machine's last ``ray start`` made (what ``ray.init(address="auto")`` would
    join), if it answers; else None."""
    from ray._private.services import find_bootstrap_address

    try:
        address = find_bootstrap_address(None)
    except Exception:  # (a private helper: if it moves, there is simply no note)
        return None
    return str(address) if address and _unreachable(str(address), timeout=1.0) is None else None


def _unreachable(target: str, timeout: float = 5.0) -> str | None:
    """Why nothing answers at a ``host:port`` (or ``ray://host:port``) Ray address, or None (or not such an
    address: Ray's own checks decide)."""
    import socket

    address = target.split("://", 1)[1] if "://" in target else target
    host, _, port = address.rstrip("/").rpartition(":")
    if not host or not port.isdigit():
        return None
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def where(address: str | None) -> str:
    target = address or os.environ.get("RAY_ADDRESS")
    return f" at {target}" if target else ""
