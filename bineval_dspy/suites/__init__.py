"""Suites: IFBench/IFEval-style rows and responses (loading with located errors), and grading with code verifiers."""

from bineval_dspy.suites.grading import ResultRow, VerifyStats, grade, verify, verify_files
from bineval_dspy.suites.rows import ResponseRow, SuiteRow, load_responses, load_suite

__all__ = ["ResponseRow", "ResultRow", "SuiteRow", "VerifyStats", "grade", "load_responses", "load_suite", "verify", "verify_files"]
