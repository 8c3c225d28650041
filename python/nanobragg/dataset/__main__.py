"""``python -m nanobragg.dataset``: see :mod:`nanobragg.dataset.cli`."""

import sys

from .cli import main

sys.exit(main())
