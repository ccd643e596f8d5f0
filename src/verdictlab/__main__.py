"""``python -m verdictlab``: the same program as the ``verdictlab`` command."""

from verdictlab.cli import entry_point

entry_point()
