"""The scheduler service: the run state machine (which node runs next), folded from run events."""
