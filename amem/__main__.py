"""python -m amem: the same as the amem command."""

import sys

from amem.cli import main

sys.exit(main())
