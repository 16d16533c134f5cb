"""The crawl configuration: one frozen dataclass, validated once, loaded from four layers.

Precedence, lowest to highest: built-in defaults < TOML file (``--config``) < ``RAYCRAWL_*`` environment
variables < command-line flags. Every field can be set in every layer under the same name (dashes or
underscores in TOML and on the command line; upper case with underscores after ``RAYCRAWL_`` in the
environment, e.g. ``RAYCRAWL_MAX_PAGES=100``). List fields take a TOML array or a comma-separated string.

The package: a setting described once (``setting.py``), the settings by group (``scope.py`` ... ``cluster.py``),
the dataclass and the tables made from the descriptions (``schema.py``), validation (``validate.py``), values made
typed (``coerce.py``), the TOML and environment layers (``toml_file.py``, ``load.py``) and resuming (``resume.py``).
"""

from raycrawl.config.coerce import coerce
from raycrawl.config.load import ENV_PREFIX, load_config, load_named_config, read_env
from raycrawl.config.resume import PYTHON_FUNCTION, resumed_config, saved_settings
from raycrawl.config.schema import (
    CALLABLE_OR_SPEC,
    DURATIONS,
    FIELD_TYPES,
    FIXED_ON_RESUME,
    PER_RUN,
    PYTHON_ONLY,
    SETTINGS,
    TABLE_KEYS,
    CrawlConfig,
)
from raycrawl.config.setting import HELP_GROUPS, Setting, setting
from raycrawl.config.toml_file import read_toml
from raycrawl.config.validate import MAX_ACTORS, MAX_BLOOM_CAPACITY, MAX_BODY_BYTES, MAX_FETCH_SECONDS, MAX_NUMBER
from raycrawl.core.fetch_settings import DEFAULT_TRACKING_PARAMS

__all__ = [
    "CALLABLE_OR_SPEC",
    "DEFAULT_TRACKING_PARAMS",
    "DURATIONS",
    "ENV_PREFIX",
    "FIELD_TYPES",
    "FIXED_ON_RESUME",
    "HELP_GROUPS",
    "MAX_ACTORS",
    "MAX_BLOOM_CAPACITY",
    "MAX_BODY_BYTES",
    "MAX_FETCH_SECONDS",
    "MAX_NUMBER",
    "PER_RUN",
    "PYTHON_FUNCTION",
    "PYTHON_ONLY",
    "SETTINGS",
    "TABLE_KEYS",
    "CrawlConfig",
    "Setting",
    "coerce",
    "load_config",
    "load_named_config",
    "read_env",
    "read_toml",
    "resumed_config",
    "saved_settings",
    "setting",
]
