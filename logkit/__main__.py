"""``python -m logkit``."""

from .cli import main

raise SystemExit(main())
