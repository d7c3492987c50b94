"""Use cases beyond pull/export/sync, one module per command family."""
