"""Where the verifier finds a predicate's code: ``hoare.source``, the one module that
locates predicate source for the whole library (re-exported here)."""

from ..source import FunctionNode, SourceNotFound, function_node

__all__ = ["FunctionNode", "SourceNotFound", "function_node"]
