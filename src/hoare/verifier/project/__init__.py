"""A ``hoare verify`` run over a project: targets, discovery, units, workers, the
verdict cache and ``[tool.hoare]``."""
