"""Test helpers shared across areas (real servers, not mocks)."""
