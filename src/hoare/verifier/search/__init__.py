"""Concrete values: counterexamples by sampling, witnesses from z3 models, and their
replay in Python."""
