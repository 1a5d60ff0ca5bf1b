"""``python -m idfields``: the same command line as the ``idfields`` script."""

from idfields.cli import main

raise SystemExit(main())
