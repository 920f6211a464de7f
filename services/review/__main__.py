"""`python -m services.review`: run the review service until SIGINT/SIGTERM."""

from __future__ import annotations

from libs.config import Settings
from libs.service import run_service
from services.review.app import SERVICE, create_app


async def main(settings: Settings) -> None:
    app, _ = create_app(settings)
    await app.run()


if __name__ == "__main__":
    run_service(SERVICE, main)
