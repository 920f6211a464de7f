"""Heym's public contracts: event and message types, and the subject names every service shares."""
