"""``python -m bytegraph run SCRIPT.py`` — see :mod:`bytegraph.cli`."""
import sys

from bytegraph.cli import main

sys.exit(main())
