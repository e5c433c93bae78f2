"""rigbook's test kit, outside the product's wheel (AIPerf keeps its mock server the same way).

- :mod:`rigbook_testkit.synthetic_server` (with ``synthetic_accept``, ``synthetic_curves``,
  ``synthetic_pacer``, ``synthetic_prefix``, ``synthetic_record``): an OpenAI-compatible streaming
  server whose timing is known and recorded by itself;
- :mod:`rigbook_testkit.launch`: the one way to start it, as its own process;
- :mod:`rigbook_testkit.nvml_replay` and :mod:`rigbook_testkit.telemetry_replay`: recorded NVML
  answers and telemetry samples behind the interfaces rigbook's probe and sampler read;
- :mod:`rigbook_testkit.selfbench`: ``make bench-client``, the bench client measured against the
  synthetic server.
"""
