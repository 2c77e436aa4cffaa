"""The operating system as an experiment variable: its knobs (``knobs``), and the changes Maximus makes to the
machine, journaled and always put back (``changes``)."""

from maximus.system.changes import applied, journal_path, recover, require
from maximus.system.knobs import OS, OsKnob, current_values, is_os_knob, split

__all__ = ["OS", "OsKnob", "applied", "current_values", "is_os_knob", "journal_path", "recover", "require", "split"]
