"""Meta-evaluation: how well a judge agrees with reference labels (people, or a stronger judge)."""

from bineval_dspy.meta.agreement import agreement, cohen_kappa

__all__ = ["agreement", "cohen_kappa"]
