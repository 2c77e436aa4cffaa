"""The driver: virtual users (terminals) in worker processes, timed against one clock."""
