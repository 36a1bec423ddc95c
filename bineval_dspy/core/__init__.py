"""The data model (questions, checklists, verdicts, scorecards), scoring, located errors, JSON I/O, the console."""
