"""Renders analysis; never computes it."""
