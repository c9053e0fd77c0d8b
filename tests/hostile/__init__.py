"""The hostile-world harness (issue 30): generators of hostile values, the registry of
every public entry point of hoare with how to drive it, and a child-process runner.

``generators`` makes the values (objects whose dunders raise, numbers from outside,
pathological texts, hostile paths, callbacks that raise BaseExceptions or are async);
``registry`` maps each entry point (a name of a public ``__all__`` or a ``hoare`` CLI
subcommand) to a driver; ``runner`` runs drivers in a child process with a time bound,
so a crash or a hang fails the test naming the case. The tests are
``tests/test_hostile_*.py``.
"""
