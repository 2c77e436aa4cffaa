"""The one thing pyproject.toml cannot say without an experimental table: the PostgreSQL driver's loop in C
(src/maximus/engines/_libpq_pump.c; README, "PostgreSQL"). Optional: without a C compiler Maximus installs
all the same and runs the same loop in Python."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("maximus.engines._libpq_pump", sources=["src/maximus/engines/_libpq_pump.c"],
                             extra_compile_args=["-O2"], optional=True)])
