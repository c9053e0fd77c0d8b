"""z3 itself: the context, the lock around every z3 object, one query, quantifier
elimination."""
