from __future__ import annotations

import sys

from aotc.cli import main

sys.exit(main())
