"""``python -m nb_agents`` and the ``nb-agents`` command (see `nb_agents.server.cli`).

Example:
    $ nb-agents serve bank:agent --port 8000 --store sqlite:///agents.db
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``nb-agents`` command line; returns the exit status."""
    try:
        from .server.cli import main as cli_main
    except ImportError as exc:
        if exc.name not in ("starlette", "uvicorn") and not str(exc.name or "").startswith("starlette."):
            raise
        print(
            "nb-agents: the server needs the 'server' extra: pip install 'nb_agents[server]'",
            file=sys.stderr,
        )
        return 2
    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
