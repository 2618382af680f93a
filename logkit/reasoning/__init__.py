"""Recording the reasoning of a bring-up: hypotheses and verdicts, todo snapshots, decision
records, the session status, and the pre-launch check against refuted configurations.

Depends on ``store`` and ``events`` only (never on ``capture`` or ``build``); the CLI imports these
modules lazily inside its handlers.
"""

from __future__ import annotations

__all__: list[str] = []
