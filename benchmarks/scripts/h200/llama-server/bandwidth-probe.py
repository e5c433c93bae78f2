"""The card's achievable memory bandwidth, read and copy, with PyTorch: the practical ceiling a
decode step's weight reads can reach, beside the 4.8 TB/s the H200's datasheet states."""

import json

import torch

GB = 1e9
n = 16 * 10**9 // 2  # 16 GB of fp16, about the F16 model's 14.8 GB of weights
src = torch.ones(n, dtype=torch.float16, device="cuda")
dst = torch.empty_like(src)


def timed(fn, repeats=10):
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1000 / repeats


read_s = timed(lambda: src.sum(dtype=torch.float32))
copy_s = timed(lambda: dst.copy_(src))
print(json.dumps({
    "bytes": n * 2,
    "read_tb_s": round(n * 2 / read_s / 1e12, 3),
    "copy_tb_s": round(2 * n * 2 / copy_s / 1e12, 3),
    "device": torch.cuda.get_device_name(),
}))
