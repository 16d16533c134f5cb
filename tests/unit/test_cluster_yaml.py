"""cluster.yaml must be a config the Ray cluster launcher accepts: validated against the schema Ray ships."""

import json
from pathlib import Path

import jsonschema
import ray
import yaml
from conftest import REPO

ROOT = REPO


def test_cluster_yaml_validates_against_rays_schema() -> None:
    schema = json.loads((Path(ray.__file__).parent / "autoscaler" / "ray-schema.json").read_text())
    config = yaml.safe_load((ROOT / "cluster.yaml").read_text())
    jsonschema.validate(config, schema)
    assert config["head_node_type"] in config["available_node_types"]
    fetch_cpus = config["available_node_types"]["fetch_worker"]["resources"]["CPU"]
    from raycrawl.config import CrawlConfig

    assert fetch_cpus >= CrawlConfig().fetch_task_cpus  # a fetch task fits on a fetch node


def test_cluster_resources_agree_with_what_tasks_and_actors_request() -> None:
    from raycrawl.actors.coordinator import CoordinatorActor
    from raycrawl.actors.dedup import DedupActor
    from raycrawl.actors.fetch_task import fetch_batch
    from raycrawl.actors.frontier import FrontierShardActor
    from raycrawl.config import CrawlConfig

    config = yaml.safe_load((ROOT / "cluster.yaml").read_text())
    types = config["available_node_types"]
    head = types[config["head_node_type"]]
    workers = {name: t for name, t in types.items() if name != config["head_node_type"]}
    fetch_cpus = CrawlConfig().fetch_task_cpus
    # Actors reserve no CPU: they are placed on the head, which offers none to tasks ...
    for actor in (CoordinatorActor, DedupActor, FrontierShardActor):
        assert actor._default_options.get("num_cpus") == 0, actor
    assert head["resources"]["CPU"] == 0
    # The head, which the autoscaler never removes, is the node that keeps them (actors/placement.py); no worker
    # type that comes and goes offers that.
    from raycrawl.actors.placement import STATE_RESOURCE

    assert head["resources"][STATE_RESOURCE] >= 1
    assert all(STATE_RESOURCE not in t["resources"] or t["min_workers"] > 0 for t in workers.values())
    # ... so fetch tasks (which ask for fetch_task_cpus CPU each) can only run on worker nodes: pending fetch
    # work is what makes the autoscaler add them, and idle ones go after idle_timeout_minutes.
    assert fetch_batch._default_options.get("max_retries") == 0  # (num_cpus is set per launch from the config)
    from raycrawl.actors.render import BROWSER_RESOURCE, RenderActor

    for node in workers.values():
        # (browser nodes hold render actors, which ask for a browser and no CPU: they offer none to fetch tasks)
        assert node["resources"]["CPU"] >= fetch_cpus or node["resources"].get(BROWSER_RESOURCE, 0) >= 1
        assert node["max_workers"] >= node["min_workers"] >= 0
    assert RenderActor._default_options.get("num_cpus") == 0
    assert any(t["resources"].get(BROWSER_RESOURCE, 0) >= 1 and t["resources"]["CPU"] == 0 for t in workers.values())
    assert 0 < config["idle_timeout_minutes"] <= 30
    assert sum(t["max_workers"] for t in workers.values()) <= config["max_workers"]
    # Every node installs raycrawl; the head runs Redis for checkpoints, reachable from the other nodes.
    assert any("pip install" in c and "raycrawl" in c for c in config["setup_commands"])
    assert any("redis-server" in c for c in config["head_setup_commands"])
    # Every node keeps idle fetch workers as the Ray raycrawl starts itself does (no new process mid-crawl).
    from raycrawl.ray_tuning import ray_start_environment

    starts = config["head_start_ray_commands"] + config["worker_start_ray_commands"]
    for name, value in ray_start_environment().items():
        assert sum(f"{name}={value} ray start" in c for c in starts) == 2, name


def test_a_ray_of_the_crawls_own_collects_metrics_only_when_asked() -> None:
    from raycrawl.ray_tuning import RAY_SYSTEM_CONFIG, own_ray_system_config

    assert own_ray_system_config({})["enable_metrics_collection"] is False
    asked = own_ray_system_config({"RAY_enable_metrics_collection": "1"})
    assert "enable_metrics_collection" not in asked and asked == RAY_SYSTEM_CONFIG  # (Ray reads the variable)
    assert "enable_metrics_collection" not in RAY_SYSTEM_CONFIG  # a `ray start` cluster keeps Ray's default
