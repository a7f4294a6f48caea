"""Tools the tests, bench/ and make share: simulated and emulated drives (not the toolkit itself)."""
