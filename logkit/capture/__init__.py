"""The capture layer: ``logkit run`` and what it records.

``process`` spawns and signals, ``environment`` probes the host, ``redact`` keeps secrets off disk,
``runner`` ties them into an attempt, and ``sglang`` understands SGLang launches and benchmarks
through the seam in ``hooks``. Never imports ``logkit.builder``.
"""

__all__ = []
