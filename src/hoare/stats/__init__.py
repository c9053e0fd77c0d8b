"""The record of every call: the store (SQLite or any SQL URL), its report, the
comparison of run labels, plots, ``hoare eval`` and ``contract_perf_stats``."""
