"""gpu_check step `environment`: what this interpreter, PyTorch and NVML say about the GPU, as one
JSON line on stdout, to hold the environment event `logkit run` records for this very command
against. Reads each value from its own source (never from nvidia-smi's CSV, which logkit parses)."""

import json
import subprocess
import sys

import torch

truth: dict = {
    "interpreter": sys.executable,
    "torch_cuda": torch.version.cuda,
    "torch_name": torch.cuda.get_device_name(0),
    "torch_capability": "%d.%d" % torch.cuda.get_device_capability(0),
}
try:
    import pynvml  # nvidia-ml-py: the library nvidia-smi itself is built on

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    name = pynvml.nvmlDeviceGetName(handle)
    driver = pynvml.nvmlSystemGetDriverVersion()
    truth["nvml_name"] = name.decode() if isinstance(name, bytes) else name
    truth["nvml_driver"] = driver.decode() if isinstance(driver, bytes) else driver
    truth["nvml_memory_mib"] = pynvml.nvmlDeviceGetMemoryInfo(handle).total // 2**20
    truth["nvml_capability"] = "%d.%d" % pynvml.nvmlDeviceGetCudaComputeCapability(handle)
except Exception as exc:  # nvidia-ml-py missing: torch's values stand alone
    truth["nvml_error"] = f"{type(exc).__name__}: {exc}"
topo = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, check=False)
truth["topology"] = topo.stdout.rstrip() if topo.returncode == 0 else None
print(json.dumps(truth))
