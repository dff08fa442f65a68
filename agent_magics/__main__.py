"""``python -m agent_magics exec ...``."""

import sys

from agent_magics.terminal.cli import main

sys.exit(main())
