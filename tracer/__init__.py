"""steplens tracer package."""
