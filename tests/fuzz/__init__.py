"""A differential fuzzer of ``hoare verify`` and the run-time pre-flight (``make fuzz``).

Generators (``values``, ``models``, ``predicates``) are composable: other tests can
draw floats, texts, ints, model types and predicate bodies from them.
"""
