"""Faults and hostile inputs, reproduced on real engines through the real `maximus` command (issue 29)."""
