"""The Ray every benchmark runs on: local, on loopback, with the settings `raycrawl crawl` gives its own Ray."""

from __future__ import annotations

import compileall
from pathlib import Path

from raycrawl.ray_tuning import RAY_SYSTEM_CONFIG

THIS_CHECKOUT = Path(__file__).resolve().parent.parent


def compile_package(checkout: str | Path = THIS_CHECKOUT) -> None:
    """The checkout's bytecode, made before a crawl: with PYTHONDONTWRITEBYTECODE set (as on this machine) Python never
    caches it, so every Ray worker a crawl started compiled raycrawl's modules again (~0.15-0.2 s of CPU each, some of
    them mid-crawl) -- a cost a user's install (a wheel has its bytecode) does not have."""
    compileall.compile_dir(Path(checkout) / "raycrawl", quiet=1)


def start_local_ray(cpus: int = 2) -> None:
    import ray

    from raycrawl.ray_runtime import loopback_only

    compile_package()
    with loopback_only():  # keep Ray itself on loopback too (the address alone is not enough: see loopback_only)
        ray.init(
            num_cpus=cpus,
            include_dashboard=False,
            log_to_driver=False,
            logging_level="WARNING",
            _node_ip_address="127.0.0.1",
            _system_config=dict(RAY_SYSTEM_CONFIG),
        )
