"""Statistics shared by every report: the grouped, paired bootstrap, and the sign test of paired changes."""

from bineval_dspy.stats.bootstrap import Bootstrap, Interval, difference_of, mean_of, ratio_of, resample_counts
from bineval_dspy.stats.sign import sign_test

__all__ = ["Bootstrap", "Interval", "difference_of", "mean_of", "ratio_of", "resample_counts", "sign_test"]
