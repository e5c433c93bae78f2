"""Bench workloads: what the requests are (rigbook.bench.workloads.model) and how users holding
sessions send them (rigbook.bench.workloads.sessions)."""

from rigbook.bench.workloads.model import (
    Workload,
    WorkloadKind,
    WorkloadRef,
    default_workload,
    get_workload,
    list_workloads,
    workload_of,
)

__all__ = [
    "Workload",
    "WorkloadKind",
    "WorkloadRef",
    "default_workload",
    "get_workload",
    "list_workloads",
    "workload_of",
]
