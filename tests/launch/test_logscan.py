"""The scanner on log lines as real engines write them."""

import pytest

from rigbook.launch.logscan import explain_exit, first_error_line, scan_lines

VLLM_FREE_MEMORY = [
    "INFO 07-17 00:07:07 [core.py:69] Initializing a V1 LLM engine (v0.9.2) with config: model='meta-llama/Llama-3.1-8B'",
    "(EngineCore_DP0 pid=6940) ERROR 02-24 20:21:58 [core.py:708] EngineCore failed to start.",
    '(EngineCore_DP0 pid=6940)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py", line 239, in determine_available_memory',
    "ValueError: Free memory on device (0.49/79.32 GiB) on startup is less than desired GPU memory utilization (0.6, 47.59 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
]
TORCH_OOM = [
    "INFO 05-28 03:35:30 model_runner.py:1115] Loading model weights took 35.2 GiB",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 78.12 GiB memory in use.",
]
LLAMA_CPP_OOM = [
    "llama_model_load_from_file_impl: using device CUDA0 (NVIDIA GeForce RTX 4090) - 23563 MiB free",
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 24576.00 MiB on device 0: cudaMalloc failed: out of memory",
    "llama_model_load: error loading model: unable to allocate CUDA0 buffer",
]
NCCL_PEER = [
    "z-pc:909608:910337 [0] NCCL INFO Channel 00 : 0[2d000] -> 1[2e000] via P2P/IPC",
    "z-pc:909608:910337 [0] transport/p2p.cc:238 NCCL WARN failed to open CUDA IPC handle : 217 peer access is not supported between these two devices",
    "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5",
]
SGLANG_CUSTOM_ALLREDUCE = [
    "[19:01:01 TP0] Init nccl begin.",
    "NCCL version 2.20.5+cuda12.4",
    "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:307 'peer access is not supported between these two devices'",
]
NCCL_ONLY = [
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, ncclUnhandledCudaError: Call to CUDA function failed.",
]
UVICORN_PORT = [
    "INFO:     Started server process [41872]",
    "INFO:     Waiting for application startup.",
    "INFO:     Application startup complete.",
    "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 8080): address already in use",
    "INFO:     Waiting for application shutdown.",
]
DOCKER_PORT = [
    "docker: Error response from daemon: driver failed programming external connectivity on endpoint rigbook-glm: Bind for 127.0.0.1:8000 failed: port is already allocated.",
]


@pytest.mark.parametrize(
    ("lines", "code", "needle"),
    [
        (VLLM_FREE_MEMORY, "E_GPU_MEMORY", "Free memory on device (0.49/79.32 GiB)"),
        (TORCH_OOM, "E_GPU_MEMORY", "CUDA out of memory"),
        (LLAMA_CPP_OOM, "E_GPU_MEMORY", "cudaMalloc failed"),
        (NCCL_PEER, "E_P2P", "peer access is not supported"),
        (SGLANG_CUSTOM_ALLREDUCE, "E_P2P", "custom_all_reduce"),
        (NCCL_ONLY, "E_P2P", "ncclUnhandledCudaError"),
        (UVICORN_PORT, "E_PORT", "address already in use"),
        (DOCKER_PORT, "E_PORT", "port is already allocated"),
    ],
)
def test_known_engine_errors_map_to_their_codes(lines, code, needle):
    hit = explain_exit(lines)
    assert hit is not None and hit.code == code and needle in hit.line


def test_an_unknown_failure_reports_the_engine_first_error_line():
    lines = [
        "INFO:     Started server process [5123]",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/site-packages/llama_cpp/server/__main__.py", line 88, in main',
        "ValueError: Model path does not exist: /models/missing.gguf",
        "ERROR: later noise",
    ]
    assert scan_lines(lines) is None
    hit = first_error_line(lines)
    assert (
        hit.code == "E_ENGINE_EXIT"
        and hit.line == "ValueError: Model path does not exist: /models/missing.gguf"
    )


def test_a_healthy_log_has_nothing_to_report():
    healthy = [
        "INFO:     Uvicorn running on http://127.0.0.1:8080 (Press CTRL+C to quit)",
        "llama_context: n_ctx = 2048",
    ]
    assert explain_exit(healthy) is None
