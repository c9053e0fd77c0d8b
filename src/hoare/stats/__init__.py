"""The record of every call: the store (SQLite or any SQL URL), its report, the
comparison of run labels, plots, ``hoare eval`` and ``contract_perf_stats``.

``records`` is what one call's record holds and the one function that builds it
(``call_record``: contracts, queries, agent runs and tool calls alike); ``store``
queues and writes the records (the writer thread, the ``Backend`` protocol,
``open_store``);
``schema`` is shared by the back ends ``sqlite`` and ``sql``; ``values`` checks what is
written and read; ``query`` reads the calls back for ``report``, ``compare``, ``plot``
and ``evaluation`` (``hoare eval``); ``perf`` sums the phases of an instance's calls
(``contract_perf_stats``)."""
