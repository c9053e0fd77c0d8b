"""The record of every call: the store (SQLite or any SQL URL), its report, the
comparison of run labels, plots, ``hoare eval`` and ``contract_perf_stats``.

``store`` records (the writer thread, the ``Backend`` protocol, ``open_store``);
``schema`` is shared by the back ends ``sqlite`` and ``sql``; ``values`` checks what is
written and read; ``query`` reads the calls back for ``report``, ``compare``, ``plot``
and ``evaluation`` (``hoare eval``); ``perf`` sums the phases of an instance's calls
(``contract_perf_stats``)."""
