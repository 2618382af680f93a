"""The pre-launch hook ``logkit run`` plugs into the runner's ``confirm(plan, environment)``.

Import-light on purpose (``logkit run`` start-up): :mod:`logkit.reasoning.refuted`, which reads the
knowledge base, is imported only when the plan is a launch with a fingerprint to compare.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["launch_confirmer"]


def launch_confirmer(
    sessions: str | None, then: Callable[[Any, Any], bool] | None = None
) -> Callable[[Any, Any], bool]:
    """``then(plan, environment)`` first, then the refuted-fingerprint check of the launch."""

    def confirm(plan: Any, environment: Any) -> bool:
        if then is not None and not then(plan, environment):
            return False
        if getattr(plan, "launch", None) is None:
            return True
        from .refuted import check_launch

        return check_launch(plan, environment, sessions)

    return confirm
