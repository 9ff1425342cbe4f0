"""steplens kernel package."""
