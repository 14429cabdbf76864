"""A user module that fails while it is imported (for the executor-loading tests)."""

raise RuntimeError("missing API key")
