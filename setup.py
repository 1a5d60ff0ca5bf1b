"""Builds the optional compiled hot path; a failed compile leaves the pure-Python reference."""

import sys
import sysconfig

from setuptools import Extension, setup

free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
is_cpython = sys.implementation.name == "cpython"

setup(
    ext_modules=[
        Extension(
            "idfields._speedups",
            ["idfields/_speedups.c"],
            optional=True,  # no compiler, no headers: install anyway, pure Python
            extra_compile_args=["-O2"],
        )
    ]
    if is_cpython and not free_threaded
    else [],
)
