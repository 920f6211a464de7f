"""Human review on the log, shared by the gateway (decisions) and the review service (expiry)."""

from libs.review.aggregate import ReviewEnded, close_if_open, review_state

__all__ = ["ReviewEnded", "close_if_open", "review_state"]
