# A copy load from cuda:0 to cuda:1 until killed, for tests/gpu/gpubw.sh:
# 1 GiB copies back to back, so that the pair's links and copy engines are
# busy while collcheck gpus measures. Prints "loading" once it runs.
import sys
import torch

a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda:0")
b = torch.empty(1 << 30, dtype=torch.uint8, device="cuda:1")
b.copy_(a)
torch.cuda.synchronize("cuda:0")
torch.cuda.synchronize("cuda:1")
print("loading", flush=True)
while True:
    for _ in range(16):
        b.copy_(a, non_blocking=True)
    torch.cuda.synchronize("cuda:0")
