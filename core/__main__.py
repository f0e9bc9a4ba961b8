"""``python -m polyphys``: the same as the ``polyphys`` console script."""

import sys

from .cli import main

sys.exit(main())
