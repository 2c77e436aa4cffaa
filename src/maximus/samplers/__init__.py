"""Samplers: OS and database statistics read at a fixed interval during every run (see ``base.py``)."""

from maximus.records import MetricSample
from maximus.samplers.base import Reading, Sampler, SamplerUnavailable, SamplingContext

__all__ = ["MetricSample", "Reading", "Sampler", "SamplerUnavailable", "SamplingContext"]
