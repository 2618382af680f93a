"""A stand-in ``sglang`` package for the tests: ``python -m sglang.launch_server`` runs logkit/demo/standin/fakeserver.py.

Put ``logkit/demo/standin/fake_sglang`` on PYTHONPATH of the wrapped command only (logkit parses the flags with
the real SGLang in an isolated interpreter, which ignores PYTHONPATH). The mode comes from
``FAKE_SGLANG_MODE`` so the flags stay ones the real ServerArgs accepts.
"""

__version__ = "0.0.0+fake"
