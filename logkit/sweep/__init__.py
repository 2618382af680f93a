"""``logkit sweep``: the backend search, unattended and resumable.

A spec (:mod:`.spec`) names a base SGLang launch and axes of flag values; :mod:`.grid` expands it
into cells checked by SGLang's own parser; :mod:`.engine` runs each cell as ordinary ``logkit run``
attempts (:mod:`.cell`) in one session, with a hypothesis per cell and a ``sweep_cell`` result;
:mod:`.state` reads sweeps back and ranks their cells; :mod:`.decide` proposes a decision record
from one; :mod:`.progress` is what the terminal shows. Only :mod:`.progress` imports ``rich``.
"""

from __future__ import annotations

__all__: list[str] = []
