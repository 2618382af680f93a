"""``python -m sglang.launch_server`` of the stand-in package: run logkit/demo/standin/fakeserver.py."""

import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.argv = [os.path.join(HERE, "..", "..", "fakeserver.py"), *sys.argv[1:]]
if os.environ.get("FAKE_SGLANG_MODE"):
    sys.argv += ["--mode", os.environ["FAKE_SGLANG_MODE"]]
runpy.run_path(sys.argv[0], run_name="__main__")
