"""``python -m leanattn``: the same as the ``leanattn`` command (leanattn._cli)."""

from ._cli import main

main()
