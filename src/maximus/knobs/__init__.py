"""Typed knob descriptors shared by every engine."""

from maximus.knobs.registry import Applies, Choice, Integer, Knob, KnobCatalogue, Size, one_line, spelled

__all__ = ["Applies", "Choice", "Integer", "Knob", "KnobCatalogue", "Size", "one_line", "spelled"]
