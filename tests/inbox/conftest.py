"""Fixtures of the inbox tests: the trust tests' agent (tests/trust on the path), served for real."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRUST = HERE.parent / "trust"
if str(TRUST) not in sys.path:
    sys.path.insert(0, str(TRUST))
