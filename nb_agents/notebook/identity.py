"""Who answers in this notebook, when nobody said: the JupyterHub user, else the local user.

The name goes into each answer's ``resume.metadata.answeredBy``. Against a
server with a context provider the audit records the authenticated principal as
``answered_by`` and keeps this as ``claimed_by``; in-process it is the answerer.
Static mode (stored outputs compared under nbval) names nobody, so outputs do
not depend on the machine.
"""

from __future__ import annotations

import getpass
import os

from .._display import static_mode

__all__ = ["local_user"]


def local_user() -> str | None:
    """``$JUPYTERHUB_USER`` where JupyterHub runs the kernel, else the OS user, else None."""
    if static_mode():
        return None
    hub = os.environ.get("JUPYTERHUB_USER", "").strip()
    if hub:
        return hub
    try:
        return getpass.getuser() or None
    except (KeyError, OSError):  # no passwd entry (some containers)
        return None
