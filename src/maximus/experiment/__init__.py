"""Experiments: a baseline, then one variable at a time, swept over client counts and repeated."""
