"""PostgreSQL's dynamic shared memory (``dynamic_shared_memory_type = posix``): one file under /dev/shm per segment,
``PostgreSQL.<handle>``, and a control segment, mapped by every server process, that lists them all. A segment that a
backend or a parallel worker made is mapped only while its makers run: after a crash that outlived them (the OOM
killer ends a backend, the server is killed while it restarts) only the control segment still names it. The server's
next start would read that list and remove them; a server that is never started again leaves them for good."""

from __future__ import annotations

import struct
from pathlib import Path

# src/backend/storage/ipc/dsm.c: a header (magic, item count, item capacity) and then, 8-byte aligned, its items, each
# a handle and its reference count (0: gone) followed by the segment's place in the main area and a flag
CONTROL_MAGIC = 0x9A503D32
HEADER = struct.Struct("=III")
ITEMS_AT = 16
ITEM = struct.Struct("=II")  # handle, reference count: the item's first fields
ITEM_SIZE = 40  # handle, refcnt (4 each), first_page, npages, impl_private_pm_handle (8 each), pinned, padding
PREFIX = "PostgreSQL."


def listed(mapped: list[Path]) -> list[Path]:
    """The segments that the control segment among ``mapped`` names, but for itself."""
    found: list[Path] = []
    for path in mapped:
        if path.name.startswith(PREFIX):
            found.extend(file for file in _items(path) if file != path)
    return found


def _items(control: Path) -> list[Path]:
    try:
        data = control.read_bytes()
    except OSError:  # gone meanwhile
        return []
    if len(data) < ITEMS_AT:
        return []
    magic, count, capacity = HEADER.unpack_from(data)
    if magic != CONTROL_MAGIC or count > capacity or ITEMS_AT + count * ITEM_SIZE > len(data):
        return []  # a segment of another kind
    items = (ITEM.unpack_from(data, ITEMS_AT + index * ITEM_SIZE) for index in range(count))
    return [control.with_name(f"{PREFIX}{handle}") for handle, references in items if references]
