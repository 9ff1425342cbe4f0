"""steplens ingest package."""
