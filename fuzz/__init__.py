"""Long-running fuzz harnesses (not part of the test run); see docs/testing-servers.md."""
