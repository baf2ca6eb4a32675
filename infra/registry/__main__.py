"""``python -m infra.registry fetch|start|stop|status``."""

import sys

from ._cli import main

sys.exit(main())
