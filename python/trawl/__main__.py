"""``trawl``, the command (``python -m trawl``, and the ``trawl`` console
script that ``pip install`` puts on the PATH): the same program as the
Rust binary that ``cargo install --path cli`` builds, run from the
extension module, so that one build gives both the command and
``import trawl``.
"""

import signal
import sys


def main() -> int:
    # Ctrl-C ends the command as it ends the binary (SIGINT's default
    # action), not as a KeyboardInterrupt that the Rust code never sees.
    # SIGPIPE is ignored in both (Rust's runtime does so too): a closed
    # pipe is an error that trawl reports quietly.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    from trawl._trawl import cli

    argv = ["trawl", *sys.argv[1:]]
    return cli(argv, [sys.executable, "-m", "trawl"])


if __name__ == "__main__":
    sys.exit(main())
