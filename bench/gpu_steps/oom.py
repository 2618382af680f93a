"""gpu_check step `oom`: PyTorch asks for twice the memory the card has (a plain cudaMalloc through
its caching allocator, never managed memory). Expected: torch.OutOfMemoryError, uncaught."""

import torch

props = torch.cuda.get_device_properties(0)
ask = 2 * props.total_memory
print(f"gpu_check oom: {props.name} has {props.total_memory / 2**30:.1f} GiB; asking for {ask / 2**30:.1f} GiB",
      flush=True)
block = torch.empty(ask, dtype=torch.uint8, device="cuda")
print("gpu_check oom: the allocation succeeded: no out-of-memory error to record")
