"""Statistics shared by every report: the grouped, paired bootstrap."""

from bineval_dspy.stats.bootstrap import Bootstrap, Interval, difference_of, mean_of, ratio_of, resample_counts

__all__ = ["Bootstrap", "Interval", "difference_of", "mean_of", "ratio_of", "resample_counts"]
