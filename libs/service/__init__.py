"""What every service process shares: broker, health replies, work consumers, entry point."""

from libs.service.context import ServiceContext
from libs.service.entry import run_service

__all__ = ["ServiceContext", "run_service"]
