"""The ``leanattn`` command of a pip installation: the compiled command-line tool (``plan``,
``bench``, ``check``, ``--version``) that the wheel carries as ``leanattn/bin/leanattn``.

pyproject.toml installs :func:`main` as the ``leanattn`` console script; it replaces the Python
process with the tool (``os.execv``), so arguments, output and exit status are the tool's own.
"""

import os
import sys
from pathlib import Path


def executable() -> str:
    """Path of the command-line tool inside the installed package."""
    return str(Path(__file__).resolve().parent / "bin" / "leanattn")


def main() -> None:
    tool = executable()
    if not os.access(tool, os.X_OK):
        sys.exit(f"leanattn: the command-line tool is not installed ({tool} is missing): this "
                 "package was built with LEANATTN_BUILD_CLI=OFF")
    os.execv(tool, ["leanattn", *sys.argv[1:]])
