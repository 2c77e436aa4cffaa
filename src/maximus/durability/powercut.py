"""The power-cut file system as a process of its own, so a database's I/O does not share Maximus's interpreter:

    python -m maximus.durability.powercut BACKING MOUNTPOINT --control SOCKET [--weights KEPT,DROPPED,GARBLED[,TORN]]

It mounts, then answers one command a connection on the control socket, a line each way (JSON answers): ``stats``
(what is pending), ``sync`` (everything pending made durable, as sync(2) does) and ``cut SEED`` (stop serving, build
the crash state, answer the cut's report). The socket appears once the file system is mounted. It serves until
unmounted (``fusermount3 -u MOUNTPOINT``)."""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import socket
import sys
from pathlib import Path
from typing import Any, Sequence

import pyfuse3
import trio

from maximus.durability.filesystem import PowerCutFs
from maximus.durability.mount import FSNAME
from maximus.durability.pending import Weights

MAX_COMMAND = 256


def main(argv: Sequence[str] | None = None) -> int:
    options = _parse(argv)
    _raise_descriptor_limit()  # one descriptor per known inode and per pending directory change
    filesystem = PowerCutFs(options.backing, options.weights)
    pyfuse3.init(filesystem, str(options.mountpoint), _mount_options())
    try:
        trio.run(_serve, filesystem, options.control)
        filesystem.shut_down()
    finally:
        pyfuse3.close(unmount=False)  # the controller unmounts, lazily if a process still holds a file
    return 0


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m maximus.durability.powercut", description=__doc__.split("\n")[0])
    parser.add_argument("backing", type=Path)
    parser.add_argument("mountpoint", type=Path)
    parser.add_argument("--control", type=Path, required=True, help="the Unix socket to answer commands on")
    parser.add_argument("--weights", type=_weights, default=Weights(),
                        help="relative odds that a pending write is kept, dropped, garbled, torn (default 1,1,1,0)")
    return parser.parse_args(argv)


def _weights(text: str) -> Weights:
    return Weights(*(float(part) for part in text.split(",")))


def _mount_options() -> set[str]:
    """The kernel checks permissions from our attributes; as root, other users (PostgreSQL's) may use the mount."""
    options = set(pyfuse3.default_options) | {f"fsname={FSNAME}", "subtype=powercut"}
    return options | {"allow_other"} if os.geteuid() == 0 else options


def _raise_descriptor_limit() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


async def _serve(filesystem: PowerCutFs, control: Path) -> None:
    listener = await _control_listener(control)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, functools.partial(_answer, filesystem), [listener])
        await pyfuse3.main()  # returns once unmounted
        nursery.cancel_scope.cancel()


async def _control_listener(path: Path) -> trio.SocketListener:
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    await sock.bind(str(path))  # created after the mount: its existence says the file system serves
    os.chmod(path, 0o600)
    sock.listen()
    return trio.SocketListener(sock)


async def _answer(filesystem: PowerCutFs, stream: trio.SocketStream) -> None:
    async with stream:
        request = b""
        while not request.endswith(b"\n") and len(request) < MAX_COMMAND:
            chunk = await stream.receive_some(MAX_COMMAND)
            if not chunk:
                break
            request += chunk
        await stream.send_all(json.dumps(_command(filesystem, request.decode().split())).encode() + b"\n")


def _command(filesystem: PowerCutFs, words: list[str]) -> dict[str, Any]:
    """A command's answer; the cut runs whole inside this call, between two file system operations."""
    if words == ["stats"]:
        return filesystem.stats()
    if words == ["sync"]:
        return {"error": "already cut"} if filesystem.stopped else filesystem.sync()
    if len(words) == 2 and words[0] == "cut" and words[1].lstrip("-").isdigit():
        if filesystem.stopped:
            return {"error": "already cut"}
        return filesystem.cut(int(words[1]))
    return {"error": f"unknown command: {' '.join(words)!r} (stats, sync, cut SEED)"}


if __name__ == "__main__":
    sys.exit(main())
