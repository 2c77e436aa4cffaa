"""The operating system and the storage stack as experiment variables, behind one protocol (``protocol``): each kind
of change (``kinds``: the machine's knobs, the server's and the client's scheduling, a storage layout, a throttle)
is checked before anything is made, applied at its stage of the run and put back after it; a run enters them once
(``machine.changed``), an experiment keeps its layouts between its runs (``storage.KeptLayouts``). Every change to
the machine is in ``journal`` before it is made."""

from maximus.system.cgroups import io_groups_of
from maximus.system.changes import OPT_IN, applied, require
from maximus.system.journal import journal_path, recover
from maximus.system.knobs import OS, OsKnob, current_values, durability_warnings, is_os_knob, machine, split
from maximus.system.machine import CHANGES, Done, Machine, changed, check_changes
from maximus.system.processes import ProcessKnob, apply_to_server, io_class, scheduling
from maximus.system.protocol import MachineChange, Seen, Stage, Target
from maximus.system.storage import KeptLayouts, Layout, Placement, StorageKnob, placed

__all__ = ["CHANGES", "OPT_IN", "OS", "Done", "KeptLayouts", "Layout", "Machine", "MachineChange", "OsKnob",
           "Placement", "ProcessKnob", "Seen", "Stage", "StorageKnob", "Target", "applied", "apply_to_server",
           "changed", "check_changes", "current_values", "durability_warnings", "io_class", "io_groups_of",
           "is_os_knob", "journal_path", "machine", "placed", "recover", "require", "scheduling", "split"]
