"""`rigbook reproduce`: from a published recipe to what this rig does against its claims."""

from rigbook.reproduce.claims import ClaimPlan, plan_claims
from rigbook.reproduce.run import ReproduceRequest, Reproduction, reproduce
from rigbook.reproduce.verdict import VerdictRow, verdict_rows

__all__ = [
    "ClaimPlan",
    "ReproduceRequest",
    "Reproduction",
    "VerdictRow",
    "plan_claims",
    "reproduce",
    "verdict_rows",
]
