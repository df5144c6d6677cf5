"""`python -m rxlab.cli ...`: the `rxlab` command without its console script."""
import sys

from rxlab.cli.main import main

sys.exit(main())
