"""gpu_check step `throughput`: a GPU-bound loop of matrix products that prints a progress line per
product (what a training or benchmark loop prints), and a rate line every 100. Its last line is
JSON: iterations, seconds (from the first product to the last one finished) and TFLOP/s.

    python3 matmul_loop.py --iterations 4000 --size 4096 [--device cpu]
"""

import argparse
import json
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--iterations", type=int, default=4000)
parser.add_argument("--size", type=int, default=4096)
parser.add_argument("--device", default="cuda")
args = parser.parse_args()

dtype = torch.bfloat16 if args.device == "cuda" else torch.float32
a = torch.randn(args.size, args.size, dtype=dtype, device=args.device)
b = torch.randn(args.size, args.size, dtype=dtype, device=args.device)
c = a @ b  # warm-up: kernels chosen, memory allocated
sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
sync()
flop = 2 * args.size**3
start = last = time.perf_counter()
for i in range(1, args.iterations + 1):
    torch.matmul(a, b, out=c)
    print(f"step {i}/{args.iterations}", flush=True)
    if i % 100 == 0:
        sync()
        now = time.perf_counter()
        print(f"step {i}: {100 * flop / (now - last) / 1e12:.1f} TFLOP/s", flush=True)
        last = now
sync()
seconds = time.perf_counter() - start
print(json.dumps({"iterations": args.iterations, "size": args.size, "seconds": round(seconds, 4),
                  "tflops": round(args.iterations * flop / seconds / 1e12, 2)}))
