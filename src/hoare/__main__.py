"""``python -m hoare``: the ``hoare`` command."""

import sys

from .cli import main

sys.exit(main())
