"""Python and pydantic → z3: symbolic values, operator semantics, types, predicates,
regexes, and the registry of modelled calls."""
