"""``python -m hoare.cli``: the ``hoare`` command."""

from hoare.cli.parser import run

run()
