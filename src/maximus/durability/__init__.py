"""Durability measured: the power-cut layer (docs/durability.md).

``mount.PowerCutMount`` mounts a backing directory through a FUSE file system of the project's own
(``filesystem.PowerCutFs``, run as its own process by ``powercut``) that keeps in memory what is not yet durable
(``pending``) and, at a seeded cut, turns the backing directory into a state a real disk could have kept. Importing
this package imports no FUSE binding: only the file system's process needs pyfuse3 (the ``durability`` extra).
"""
