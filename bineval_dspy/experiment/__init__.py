"""Experiments as configs: arms side by side on one test split (`bineval experiment`)."""
