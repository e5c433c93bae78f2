"""`rigbook reproduce`: from a published recipe to what this rig does against its claims."""

from rigbook.reproduce.claims import ClaimPlan, plan_claims
from rigbook.reproduce.run import ReproduceRequest, reproduce
from rigbook.reproduce.verdict import verdict_rows
from rigbook.reproduction import Reproduction, VerdictRow

__all__ = [
    "ClaimPlan",
    "ReproduceRequest",
    "Reproduction",
    "VerdictRow",
    "plan_claims",
    "reproduce",
    "verdict_rows",
]
