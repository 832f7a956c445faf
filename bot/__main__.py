"""`python -m bot`: see `bot.cli`."""

import sys

from .cli import main

sys.exit(main())
