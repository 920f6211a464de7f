"""Test support shared by the test suites and the offline demo."""
