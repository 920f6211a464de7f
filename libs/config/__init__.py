"""Settings read once from the `HEYM_*` environment into a frozen struct and passed down."""

from libs.config.settings import Settings, SettingsError, load_settings

__all__ = ["Settings", "SettingsError", "load_settings"]
