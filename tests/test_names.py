"""Names a newcomer could confuse: nothing in logkit.capture exports a name the event models use
(events.Verdict vs the watcher's result, events.Decision vs the classifier's, events.Record vs the
run path's plain base class)."""

from __future__ import annotations

import importlib
import pkgutil

import logkit.capture
from logkit import events


def test_capture_exports_no_event_model_name() -> None:
    models = set(events.__all__)
    clashes = {}
    for info in pkgutil.walk_packages(logkit.capture.__path__, "logkit.capture."):
        module = importlib.import_module(info.name)
        shared = models & set(getattr(module, "__all__", ()))
        if shared:
            clashes[info.name] = sorted(shared)
    assert clashes == {}
