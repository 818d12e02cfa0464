"""``python -m capshift ...``: the ``capshift`` command line (:func:`capshift.cli.main`) without the console script."""
import sys

from capshift.cli import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m capshift"))
