"""Reading JSON configuration files strictly: repeated and unknown keys are refused,
URLs checked, every problem a :class:`ConfigError` naming where it is."""

from ._config import ConfigError, check_url, load_json, reject_unknown_keys

__all__ = ["ConfigError", "check_url", "load_json", "reject_unknown_keys"]
