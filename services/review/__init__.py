"""The review service: human review requests, tokens, expiry and decisions."""
