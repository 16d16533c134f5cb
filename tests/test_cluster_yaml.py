"""cluster.yaml must be a config the Ray cluster launcher accepts: validated against the schema Ray ships."""

import json
from pathlib import Path

import jsonschema
import ray
import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_cluster_yaml_validates_against_rays_schema() -> None:
    schema = json.loads((Path(ray.__file__).parent / "autoscaler" / "ray-schema.json").read_text())
    config = yaml.safe_load((ROOT / "cluster.yaml").read_text())
    jsonschema.validate(config, schema)
    assert config["head_node_type"] in config["available_node_types"]
    fetch_cpus = config["available_node_types"]["fetch_worker"]["resources"]["CPU"]
    from raycrawl.config import CrawlConfig

    assert fetch_cpus >= CrawlConfig().fetch_task_cpus  # a fetch task fits on a fetch node
