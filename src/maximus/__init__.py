"""Maximus: a database benchmarking and tuning lab."""

__version__ = "0.1.0"
