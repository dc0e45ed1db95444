"""``python -m schedatrix``: the same as the ``schedatrix`` command."""

import sys

from .cli import main

sys.exit(main())
