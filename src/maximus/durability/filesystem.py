"""The power-cut file system: every operation passes through to a backing directory at once, and what is not durable
yet is remembered (maximus.durability.pending) until a sync makes it durable or a cut decides its fate.

Inodes are held as O_PATH descriptors of the backing files and every change is made relative to its directory's
descriptor (the *at system calls), so a renamed directory needs no path bookkeeping. An unlinked file, a removed
directory and a rename's displaced target are moved to a hidden stash in the backing directory until the change is
durable, so a cut can put them back (maximus.durability.entries). The handlers never await, so each runs whole before
the next: no locks."""

from __future__ import annotations

import errno
import functools
import itertools
import os
import shutil
import stat
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, Sequence, TypeVar

import pyfuse3

from maximus.durability.entries import STASH, Place, Stash
from maximus.durability.pending import (FileAtCut, FileState, NamespaceLog, PendingTruncate, PendingWrite, Weights,
                                        cut)

SYNC_FLAGS = os.O_DSYNC  # O_SYNC includes this bit on Linux
# The kernel caches names and attributes this long: every change goes through this file system, so they stay true
TIMEOUT_S = 1.0

Handler = TypeVar("Handler", bound=Callable[..., Awaitable[Any]])


def served(handler: Handler) -> Handler:
    """After a cut every operation fails with EIO, as on a disk that lost power; an OSError of the backing store is
    the caller's error number. Any other exception is a bug of ours: its traceback goes to the log and the count of
    errors (which the tests check is 0), and the caller gets EIO, where pyfuse3 would end the file system."""
    @functools.wraps(handler)
    async def serve(self: PowerCutFs, *args: Any, **kwargs: Any) -> Any:
        if self.stopped:
            raise pyfuse3.FUSEError(errno.EIO)
        try:
            return await handler(self, *args, **kwargs)
        except pyfuse3.FUSEError:
            raise
        except OSError as error:
            raise pyfuse3.FUSEError(error.errno or errno.EIO) from None
        except Exception:
            self.counts["errors"] += 1
            traceback.print_exc()
            raise pyfuse3.FUSEError(errno.EIO) from None
    return serve  # type: ignore[return-value]


def _proc(fd: int) -> str:
    """A path that reopens what an O_PATH descriptor holds."""
    return f"/proc/self/fd/{fd}"


@dataclass
class Node:
    fd: int  # O_PATH, of the backing file or directory
    lookups: int
    name: str  # its path when last looked up, for the cut's report
    state: FileState | None = None  # its data since the last sync, once it changed


@dataclass
class Handle:
    fd: int
    inode: int
    sync_writes: bool = False  # opened with O_SYNC or O_DSYNC: each write is durable when it returns


class PowerCutFs(pyfuse3.Operations):
    # Each write(2) reaches the layer as it is made, so an O_DSYNC write is seen as one and nothing waits in the
    # kernel where a cut could not drop it (the kernel's cache of the mount is write-through)
    enable_writeback_cache = False

    def __init__(self, backing: Path, weights: Weights = Weights()) -> None:
        super().__init__()
        self.weights = weights
        self.stopped = False
        self.root_fd = os.open(backing, os.O_PATH | os.O_DIRECTORY)
        self.stash = Stash(backing)
        self.nodes: dict[int, Node] = {pyfuse3.ROOT_INODE: Node(self.root_fd, 1, "")}
        self.identities: dict[tuple[int, int], int] = {_identity(self.root_fd): pyfuse3.ROOT_INODE}
        self.handles: dict[int, Handle] = {}
        self.namespace = NamespaceLog()
        self.sequence = itertools.count(1)
        self.next_inode = itertools.count(pyfuse3.ROOT_INODE + 1)
        self.next_handle = itertools.count(1)
        self.counts = {"writes": 0, "sync_writes": 0, "fsync": 0, "fsyncdir": 0, "errors": 0}  # since mounted

    # -- the control protocol's commands (maximus.durability.powercut) --

    def cut(self, seed: int) -> dict[str, Any]:
        """Stop serving, then turn the backing directory into the crash state drawn by ``seed``."""
        self.stopped = True
        files = [FileAtCut(node.name, functools.partial(os.open, _proc(node.fd), os.O_RDWR), node.state)
                 for node in self.nodes.values() if node.state and node.state.pending and _alive(node.fd)]
        report = cut(seed, files, self.namespace, self.weights)
        self.stash.remove()
        return {**report, "errors": self.counts["errors"]}

    def shut_down(self) -> None:
        """After a clean unmount the backing directory holds every change, as a disk does after a clean shutdown."""
        if not self.stopped:
            self.stopped = True
            self.namespace.make_all_durable()
            self.stash.remove()

    def sync(self) -> dict[str, Any]:
        """sync(2) of the whole disk: every file's data and every directory change durable, as they stand now."""
        for node in self.nodes.values():
            if node.state is not None and node.state.pending and _alive(node.fd):
                node.state.make_durable(os.fstat(node.fd).st_size)
        self.namespace.make_all_durable()
        return self.stats()

    def stats(self) -> dict[str, Any]:
        states = [node.state for node in self.nodes.values() if node.state and node.state.pending]
        return {"pending_files": len(states), "pending_changes": sum(len(state.pending) for state in states),
                "pending_bytes": sum(state.pending_bytes for state in states),
                "pending_namespace": len(self.namespace.changes), "stopped": self.stopped, **self.counts}

    # -- names --

    def _remember(self, fd: int, name: str) -> tuple[int, os.stat_result]:
        """The inode of a freshly opened O_PATH descriptor: a known one gains a lookup (and the new descriptor is
        closed), an unknown one is numbered."""
        attributes = os.fstat(fd)
        key = (attributes.st_dev, attributes.st_ino)
        inode = self.identities.get(key)
        if inode is not None and _alive(self.nodes[inode].fd):
            os.close(fd)
            self.nodes[inode].lookups += 1
            return inode, attributes
        inode = next(self.next_inode)  # new, or the backing inode number was reused after a durable unlink
        self.nodes[inode], self.identities[key] = Node(fd, 1, name), inode
        return inode, attributes

    def _entry(self, parent: int, name: bytes) -> tuple[int, os.stat_result]:
        if parent == pyfuse3.ROOT_INODE and name == STASH.encode():
            raise pyfuse3.FUSEError(errno.ENOENT)
        fd = os.open(name, os.O_PATH | os.O_NOFOLLOW, dir_fd=self.nodes[parent].fd)
        return self._remember(fd, _join(self.nodes[parent].name, name))

    def _attributes(self, inode: int, attributes: os.stat_result) -> pyfuse3.EntryAttributes:
        entry = pyfuse3.EntryAttributes()
        for field in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_rdev", "st_size", "st_blksize", "st_blocks",
                      "st_atime_ns", "st_mtime_ns", "st_ctime_ns"):
            setattr(entry, field, getattr(attributes, field))
        entry.st_ino = inode
        entry.entry_timeout = entry.attr_timeout = TIMEOUT_S
        return entry

    @served
    async def lookup(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        return self._attributes(*self._entry(parent_inode, name))

    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        for inode, count in inode_list:
            node = self.nodes.get(inode)
            if node is None:
                continue
            node.lookups -= count
            # a node with pending data stays: the cut must find its file
            if node.lookups <= 0 and inode != pyfuse3.ROOT_INODE and not (node.state and node.state.pending):
                self._drop_node(inode)

    def _drop_node(self, inode: int) -> None:
        node = self.nodes.pop(inode)
        key = _identity(node.fd)
        if self.identities.get(key) == inode:
            del self.identities[key]
        os.close(node.fd)

    @served
    async def getattr(self, inode: int, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        return self._attributes(inode, os.fstat(self.nodes[inode].fd))

    @served
    async def setattr(self, inode: int, attr: pyfuse3.EntryAttributes, fields: pyfuse3.SetattrFields,
                      fh: int | None, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        node = self.nodes[inode]
        if fields.update_size:
            self._truncate(node, attr.st_size)
        if fields.update_mode:
            os.chmod(_proc(node.fd), stat.S_IMODE(attr.st_mode))
        if fields.update_uid or fields.update_gid:
            os.chown(_proc(node.fd), attr.st_uid if fields.update_uid else -1,
                     attr.st_gid if fields.update_gid else -1)
        if fields.update_atime or fields.update_mtime:
            now = os.fstat(node.fd)
            os.utime(_proc(node.fd), ns=(attr.st_atime_ns if fields.update_atime else now.st_atime_ns,
                                         attr.st_mtime_ns if fields.update_mtime else now.st_mtime_ns))
        return self._attributes(inode, os.fstat(node.fd))

    @served
    async def readlink(self, inode: int, ctx: pyfuse3.RequestContext) -> bytes:
        return os.fsencode(os.readlink("", dir_fd=self.nodes[inode].fd))

    @served
    async def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
        found, data = os.statvfs(_proc(self.root_fd)), pyfuse3.StatvfsData()
        for field in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree", "f_favail",
                      "f_namemax"):
            setattr(data, field, getattr(found, field))
        return data

    # -- directories --

    @served
    async def opendir(self, inode: int, ctx: pyfuse3.RequestContext) -> int:
        return self._open_handle(os.open(".", os.O_RDONLY | os.O_DIRECTORY, dir_fd=self.nodes[inode].fd), inode)

    @served
    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        handle = self.handles[fh]
        names = sorted(name for name in os.listdir(handle.fd)
                       if not (handle.inode == pyfuse3.ROOT_INODE and name == STASH))
        for index, name in enumerate(names[start_id:], start=start_id):
            inode, attributes = self._entry(handle.inode, os.fsencode(name))
            if not pyfuse3.readdir_reply(token, os.fsencode(name), self._attributes(inode, attributes), index + 1):
                await self.forget([(inode, 1)])  # not sent: the kernel holds no lookup of it
                return

    async def releasedir(self, fh: int) -> None:
        os.close(self.handles.pop(fh).fd)

    @served
    async def fsyncdir(self, fh: int, datasync: bool) -> None:
        self.counts["fsyncdir"] += 1
        self.namespace.make_durable_through(self.handles[fh].inode)

    @served
    async def mkdir(self, parent_inode: int, name: bytes, mode: int,
                    ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        parent = self._writable_parent(parent_inode, name)
        os.mkdir(name, mode & ~ctx.umask, dir_fd=parent)
        self._own(parent, name, ctx)
        self._created("mkdir", parent_inode, name, undo=_remove_tree)
        return self._attributes(*self._entry(parent_inode, name))

    @served
    async def rmdir(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        parent = self._writable_parent(parent_inode, name)
        if os.listdir(os.path.join(_proc(parent), os.fsdecode(name))):
            raise pyfuse3.FUSEError(errno.ENOTEMPTY)
        self._move_aside("rmdir", parent_inode, name)

    # -- entries --

    @served
    async def unlink(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        parent = self._writable_parent(parent_inode, name)
        if stat.S_ISDIR(os.lstat(name, dir_fd=parent).st_mode):
            raise pyfuse3.FUSEError(errno.EISDIR)
        self._move_aside("unlink", parent_inode, name)

    @served
    async def create(self, parent_inode: int, name: bytes, mode: int, flags: int,
                     ctx: pyfuse3.RequestContext) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        parent = self._writable_parent(parent_inode, name)
        fd = os.open(name, _backing_flags(flags) | os.O_CREAT | os.O_EXCL, mode & ~ctx.umask, dir_fd=parent)
        self._own(parent, name, ctx)
        self._created("create", parent_inode, name, undo=_unlink)
        inode, attributes = self._entry(parent_inode, name)
        return self._file_info(fd, inode, flags), self._attributes(inode, attributes)

    @served
    async def mknod(self, parent_inode: int, name: bytes, mode: int, rdev: int,
                    ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        parent = self._writable_parent(parent_inode, name)
        os.mknod(name, mode & ~ctx.umask, rdev, dir_fd=parent)
        self._own(parent, name, ctx)
        self._created("mknod", parent_inode, name, undo=_unlink)
        return self._attributes(*self._entry(parent_inode, name))

    @served
    async def symlink(self, parent_inode: int, name: bytes, target: bytes,
                      ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        parent = self._writable_parent(parent_inode, name)
        os.symlink(target, name, dir_fd=parent)
        self._own(parent, name, ctx)
        self._created("symlink", parent_inode, name, undo=_unlink)
        return self._attributes(*self._entry(parent_inode, name))

    @served
    async def link(self, inode: int, new_parent_inode: int, new_name: bytes,
                   ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        parent = self._writable_parent(new_parent_inode, new_name)
        os.link(os.fsencode(_proc(self.nodes[inode].fd)), new_name, dst_dir_fd=parent, follow_symlinks=True)
        self._created("link", new_parent_inode, new_name, undo=_unlink)
        return self._attributes(*self._entry(new_parent_inode, new_name))

    @served
    async def rename(self, parent_inode_old: int, name_old: bytes, parent_inode_new: int, name_new: bytes,
                     flags: int, ctx: pyfuse3.RequestContext) -> None:
        if flags & pyfuse3.RENAME_EXCHANGE:
            raise pyfuse3.FUSEError(errno.EINVAL)  # not modelled: no engine we drive exchanges names
        old = self._writable_parent(parent_inode_old, name_old)
        new = self._writable_parent(parent_inode_new, name_new)
        source = os.lstat(name_old, dir_fd=old)
        target = _lstat_or_none(name_new, new)
        if target is not None and (source.st_dev, source.st_ino) == (target.st_dev, target.st_ino):
            return  # two names of one file: rename(2) does nothing
        if target is not None:
            _check_replaceable(source, target, flags, os.path.join(_proc(new), os.fsdecode(name_new)))
        self.namespace.record(self.stash.renamed(next(self.sequence), self._place(parent_inode_old, name_old),
                                                 self._place(parent_inode_new, name_new), replaces=target is not None))

    def _place(self, directory: int, name: bytes) -> Place:
        return Place(directory, self.nodes[directory].fd, name, _join(self.nodes[directory].name, name))

    def _created(self, kind: str, parent_inode: int, name: bytes, undo: Callable[[bytes, int], None]) -> None:
        self.namespace.record(self.stash.created(next(self.sequence), kind, self._place(parent_inode, name), undo))

    def _move_aside(self, kind: str, parent_inode: int, name: bytes) -> None:
        self.namespace.record(self.stash.moved_aside(next(self.sequence), kind, self._place(parent_inode, name)))

    def _writable_parent(self, parent_inode: int, name: bytes) -> int:
        if parent_inode == pyfuse3.ROOT_INODE and name == STASH.encode():
            raise pyfuse3.FUSEError(errno.EPERM)
        return self.nodes[parent_inode].fd

    def _own(self, parent: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        """A new entry belongs to the process that made it, as on a local file system (PostgreSQL checks that its
        data directory is its user's); this file system runs as root to allow it."""
        if os.geteuid() == 0:
            os.chown(name, ctx.uid, ctx.gid, dir_fd=parent, follow_symlinks=False)

    # -- file data --

    @served
    async def open(self, inode: int, flags: int, ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo:
        fd = os.open(_proc(self.nodes[inode].fd), _backing_flags(flags))
        if flags & os.O_TRUNC:  # libfuse asks the kernel to pass O_TRUNC here rather than as a setattr
            self._truncate(self.nodes[inode], 0)
        return self._file_info(fd, inode, flags)

    def _file_info(self, fd: int, inode: int, flags: int) -> pyfuse3.FileInfo:
        fh = self._open_handle(fd, inode)
        self.handles[fh].sync_writes = bool(flags & SYNC_FLAGS)
        return pyfuse3.FileInfo(fh=fh, keep_cache=True)

    def _open_handle(self, fd: int, inode: int) -> int:
        fh = next(self.next_handle)
        self.handles[fh] = Handle(fd, inode)
        return fh

    @served
    async def read(self, fh: int, off: int, size: int) -> bytes:
        return os.pread(self.handles[fh].fd, size, off)

    @served
    async def write(self, fh: int, off: int, buf: bytes) -> int:
        handle = self.handles[fh]
        state = self._state(handle.inode, handle.fd)
        self.counts["writes"] += 1
        if handle.sync_writes:  # durable when it returns, with every earlier write of the file (docs/durability.md)
            written = os.pwrite(handle.fd, buf, off)
            self.counts["sync_writes"] += 1
            state.make_durable(os.fstat(handle.fd).st_size)
            return written
        state.save_before_change(handle.fd, off, off + len(buf))
        written = os.pwrite(handle.fd, buf, off)
        state.record(PendingWrite(next(self.sequence), off, bytes(buf[:written])))
        return written

    def _truncate(self, node: Node, size: int) -> None:
        fd = os.open(_proc(node.fd), os.O_RDWR)
        try:
            state = self._state_of(node, fd)
            current = os.fstat(fd).st_size
            if current == size:
                return  # O_TRUNC of an empty file: no change to record
            state.save_before_change(fd, min(current, size), max(current, size))
            os.ftruncate(fd, size)
            state.record(PendingTruncate(next(self.sequence), size))
        finally:
            os.close(fd)

    def _state(self, inode: int, fd: int) -> FileState:
        return self._state_of(self.nodes[inode], fd)

    @staticmethod
    def _state_of(node: Node, fd: int) -> FileState:
        """The file's pending data; a file without any holds what a disk holds, so its durable size is its size."""
        if node.state is None:
            node.state = FileState(durable_size=os.fstat(fd).st_size)
        return node.state

    @served
    async def fsync(self, fh: int, datasync: bool) -> None:
        handle = self.handles[fh]
        self.counts["fsync"] += 1
        self._state(handle.inode, handle.fd).make_durable(os.fstat(handle.fd).st_size)

    async def flush(self, fh: int) -> None:
        pass  # close(2) makes nothing durable

    async def release(self, fh: int) -> None:
        os.close(self.handles.pop(fh).fd)


def _backing_flags(flags: int) -> int:
    """The backing file is opened for reading too (a change saves the bytes it overwrites), without O_APPEND (the
    kernel sends each write's offset), O_DIRECT (Python's buffers are not aligned) or a sync flag (the disk here is
    the model in memory)."""
    return os.O_RDWR if flags & os.O_ACCMODE != os.O_RDONLY else os.O_RDONLY


def _identity(fd: int) -> tuple[int, int]:
    attributes = os.fstat(fd)
    return attributes.st_dev, attributes.st_ino


def _alive(fd: int) -> bool:
    """Whether the file still has a name (a durable unlink removed it: its inode number may be reused)."""
    return os.fstat(fd).st_nlink > 0


def _join(parent: str, name: bytes) -> str:
    return f"{parent}/{os.fsdecode(name)}" if parent else os.fsdecode(name)


def _lstat_or_none(name: bytes, parent: int) -> os.stat_result | None:
    try:
        return os.lstat(name, dir_fd=parent)
    except FileNotFoundError:
        return None


def _check_replaceable(source: os.stat_result, target: os.stat_result, flags: int, target_path: str) -> None:
    """The errors rename(2) gives when the target exists."""
    if flags & pyfuse3.RENAME_NOREPLACE:
        raise pyfuse3.FUSEError(errno.EEXIST)
    if stat.S_ISDIR(source.st_mode) and not stat.S_ISDIR(target.st_mode):
        raise pyfuse3.FUSEError(errno.ENOTDIR)
    if not stat.S_ISDIR(source.st_mode) and stat.S_ISDIR(target.st_mode):
        raise pyfuse3.FUSEError(errno.EISDIR)
    if stat.S_ISDIR(target.st_mode) and os.listdir(target_path):
        raise pyfuse3.FUSEError(errno.ENOTEMPTY)


def _unlink(name: bytes, directory: int) -> None:
    os.unlink(name, dir_fd=directory)


def _remove_tree(name: bytes, directory: int) -> None:
    shutil.rmtree(name, dir_fd=directory)
