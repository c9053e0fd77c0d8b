"""``python -m hoare``: the ``hoare`` command."""

from hoare.cli.parser import run

run()
