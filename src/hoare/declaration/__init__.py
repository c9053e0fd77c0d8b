"""What a contract declares: the shared description of a class, its conditions, its
models, and where its predicates' source is."""
