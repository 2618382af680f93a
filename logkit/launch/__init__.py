"""One launch module: how logkit reads an SGLang launch's flags, everywhere it does.

* :mod:`.flags`: the plain parser (one typing rule), the fingerprint rule and the config diff, from
  the one table ``logkit/data/launch.toml`` (which keys are fingerprint keys and backend axes, what
  a failure refutes, which env vars a diff compares).
* :mod:`.sglang`: SGLang's own parser run in the command's interpreter, the cache of its options
  (``$XDG_CACHE_HOME/logkit/sglang-parser``), the in-process quick parse for preflight, and the
  full parse in the background.
* :mod:`.config`: a launch config from an argv, for ``logkit run`` (captured), ``logkit import``
  (imported) and ``logkit record`` (reconstructed): one builder, one fingerprint rule.

Import-light by design (stdlib only, no pydantic): ``logkit run`` uses it before the child starts.
"""

__all__: list[str] = []
