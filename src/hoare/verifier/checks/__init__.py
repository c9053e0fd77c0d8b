"""The checks of ``hoare verify``: per contract, per pipeline, per agent tool."""
