"""One launch module: how logkit reads an SGLang launch's flags, everywhere it does.

:mod:`.flags` (the plain parser, the fingerprint rule and the config diff, from the one table
``logkit/data/launch.toml``); :mod:`.sglang` (SGLang's own parser run in the command's interpreter,
and the cache of its options); :mod:`.config` (a launch config from an argv, for ``logkit run``,
``logkit import`` and ``logkit record``: one builder, one fingerprint rule). Import-light by design
(stdlib only, no pydantic): ``logkit run`` uses it before the child starts.
"""

__all__: list[str] = []
