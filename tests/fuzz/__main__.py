"""``python -m tests.fuzz``: the differential fuzzer (see ``run``)."""

from .run import main

raise SystemExit(main())
