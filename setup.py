"""Builds the optional compiled hot path; without a C toolchain the package is pure Python.

The toolchain is probed first (Python's headers, then a one-line C file through the compiler
the extension would use, ``CC`` included): where it cannot build, no extension is declared, so
the wheel is ``py3-none-any`` instead of claiming a platform it has no binary for.
``optional=True`` still covers a failure the probe could not foresee.
"""

import sys
import sysconfig
import tempfile
from pathlib import Path

from setuptools import Extension, setup


def can_compile() -> bool:
    """True when Python.h is present and the C compiler compiles a file that includes it."""
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").is_file():
        return False
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.sysconfig import customize_compiler

    compiler = new_compiler()
    customize_compiler(compiler)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "probe.c"
        source.write_text("#include <Python.h>\nint main(void) { return 0; }\n")
        try:
            compiler.compile([str(source)], output_dir=tmp, include_dirs=[include])
        except Exception:  # whatever the toolchain raises, it cannot build the extension
            return False
    return True


free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
is_cpython = sys.implementation.name == "cpython"

setup(
    ext_modules=[
        Extension(
            "idfields._speedups",
            ["idfields/_speedups.c"],
            optional=True,  # a failure the probe did not foresee: install anyway, pure Python
            extra_compile_args=["-O2"],
        )
    ]
    if is_cpython and not free_threaded and can_compile()
    else [],
)
