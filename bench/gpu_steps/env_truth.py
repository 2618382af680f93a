"""gpu_check step `environment`: what this interpreter, PyTorch, NVML and nvidia-smi say about GPU 0,
as one JSON line on stdout, to hold the environment event `logkit run` records for this very
command against. nvidia-smi is asked one field at a time (nothing to parse: logkit parses its
multi-field CSV, and that parse is what is checked)."""

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
    truth["nvml_capability"] = "%d.%d" % pynvml.nvmlDeviceGetCudaComputeCapability(handle)
except Exception as exc:  # nvidia-ml-py missing: torch's values stand alone
    truth["nvml_error"] = f"{type(exc).__name__}: {exc}"


def smi(field: str) -> str | None:
    done = subprocess.run(["nvidia-smi", "-i", "0", f"--query-gpu={field}", "--format=csv,noheader,nounits"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


memory = smi("memory.total")
truth.update(smi_name=smi("name"), smi_driver=smi("driver_version"), smi_capability=smi("compute_cap"),
             smi_memory_mib=int(memory) if memory and memory.isdigit() else memory)
topo = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, check=False)
truth["topology"] = topo.stdout.rstrip() if topo.returncode == 0 else None
print(json.dumps(truth))
