"""`python -m treadle ...`: the same command line as the `treadle` script."""

import sys

from treadle.cli import main

sys.exit(main())
