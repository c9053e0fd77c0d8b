"""hoare: Hoare triples {P} C {Q} around LLM calls."""
