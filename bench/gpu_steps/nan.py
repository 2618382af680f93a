"""gpu_check step `nan`: half-precision logits overflow to inf on the GPU, softmax turns them into
NaN, and a sampler (torch.multinomial, as a serving stack samples) refuses them. Expected:
RuntimeError "probability tensor contains either `inf`, `nan` or element < 0", uncaught."""

import torch


def sample(logits: torch.Tensor) -> torch.Tensor:
    """One token per row, from the softmax of the logits (computed in float32, as samplers do)."""
    probs = torch.softmax(logits.float(), dim=-1)
    return torch.multinomial(probs, num_samples=1)


hidden = torch.full((4, 4096), 64.0, dtype=torch.float16, device="cuda")
lm_head = torch.full((4096, 32000), 64.0, dtype=torch.float16, device="cuda")
logits = hidden @ lm_head  # each entry 4096 * 64 * 64 = 16.8M, past float16's 65504: inf
print(f"gpu_check nan: logits finite: {bool(torch.isfinite(logits).all())}; "
      f"softmax NaN: {bool(torch.softmax(logits.float(), dim=-1).isnan().any())}", flush=True)
print(f"gpu_check nan: sampled {sample(logits).tolist()}")
