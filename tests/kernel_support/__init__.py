"""Support for the kernel's property tests (tests/test_kernel_*.py).

``scripts``: generated descriptions of what every hook of a call does (a *case*).
``harness``: hooks and engines built from a case, recording every invocation, and
the two drivers. ``oracle``: spec/pipeline.md re-executed on a case, independently
of ``kernel/``, giving the expected hook invocations, effects and outcome.
"""
