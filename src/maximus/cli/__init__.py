"""The command line: a thin skin over ``maximus.api``."""
