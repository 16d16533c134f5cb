"""The Ray every benchmark runs on: local, on loopback, with the settings `raycrawl crawl` gives its own Ray."""

from __future__ import annotations

from raycrawl.ray_tuning import RAY_SYSTEM_CONFIG


def start_local_ray(cpus: int = 2) -> None:
    import ray

    from raycrawl.ray_runtime import loopback_only

    with loopback_only():  # keep Ray itself on loopback too (the address alone is not enough: see loopback_only)
        ray.init(
            num_cpus=cpus,
            include_dashboard=False,
            log_to_driver=False,
            logging_level="WARNING",
            _node_ip_address="127.0.0.1",
            _system_config=dict(RAY_SYSTEM_CONFIG),
        )
