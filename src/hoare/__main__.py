"""``python -m hoare``: the ``hoare`` command."""

from .cli import run

run()
