"""Workflows: what a command does with whole run directories, importable from a notebook.

Each opens runs and combines analyses into its own result: ``demo`` (what ``verdictlab demo`` shows),
``selftest`` (the auditor audits itself on planted judges), ``drift`` (two runs of one judge),
``review`` (the pairs a person should look at), ``comparison`` (judges or runs side by side) and
``human_label_runs`` (a run's verdicts against a human-label file). Registered tables live in
:mod:`verdictlab.analyses`; workflows never register one.
"""
