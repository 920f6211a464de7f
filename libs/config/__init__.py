"""Settings read once from the `HEYM_*` environment into a frozen struct and passed down."""

from libs.config.needs import NEEDS_DATABASE, NEEDS_SECRET_KEY, service_env
from libs.config.settings import Settings, SettingsError, load_settings, nats_servers

__all__ = [
    "NEEDS_DATABASE",
    "NEEDS_SECRET_KEY",
    "Settings",
    "SettingsError",
    "load_settings",
    "nats_servers",
    "service_env",
]
