"""A judge of your own, as code: the function verdictlab calls for each judgment (docs/python.md).

It stands in for a prompt template, a model call and its post-processing.  Here it reads the two
responses from the prompt of the ``direct`` protocol and prefers the shorter one -- a judge with a
bias the audit should find.  ``verdictlab run examples/python-judge.yaml`` audits it as
``python:my_judges:shorter`` (with ``examples`` on ``PYTHONPATH``).
"""

import re

import verdictlab

_RESPONSES = re.compile(r"Response A:\n(.*)\n\nResponse B:\n(.*)\n\nWhich", re.S)


class Busy(Exception):
    """What a rate-limited service of yours might raise: worth another attempt."""


@verdictlab.judge("shorter", retry_on=Busy)
def shorter(messages, *, temperature, max_tokens, seed):
    """Prefers the shorter response of the ``direct`` prompt."""
    found = _RESPONSES.search(messages[-1]["content"])
    if found is None:
        return "I cannot tell"          # stored as unparsed, never guessed
    a, b = found.groups()
    return "A" if len(a) <= len(b) else "B"
