"""Typed knob descriptors shared by every engine."""

from maximus.knobs.registry import Applies, Choice, Integer, Knob, KnobCatalogue, Size

__all__ = ["Applies", "Choice", "Integer", "Knob", "KnobCatalogue", "Size"]
