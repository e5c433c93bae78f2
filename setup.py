"""The one compiled part of rigbook: the bench client's reader (rigbook/bench/_reader.c, with _reader_events.c).

Everything else is in pyproject.toml. The extension is optional: where it cannot be built (no C
compiler, not Linux), rigbook installs without it and the bench streams through its Python client.
"""

import sys

from setuptools import Extension, setup

ext_modules = []
if sys.platform.startswith("linux"):
    ext_modules.append(
        Extension(
            "rigbook.bench._reader",
            sources=["rigbook/bench/_reader.c", "rigbook/bench/_reader_events.c"],
            depends=["rigbook/bench/_reader_events.h"],
            extra_compile_args=["-O2", "-std=gnu11", "-Wall", "-Wno-missing-field-initializers"],
            optional=True,
        )
    )

setup(ext_modules=ext_modules)
