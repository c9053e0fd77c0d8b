"""The ``hoare`` command: one parser, one module per command. ``run`` is the console
script's entry point (``hoare = "hoare.cli:run"``)."""

from hoare.cli.parser import main, run

__all__ = ["main", "run"]
