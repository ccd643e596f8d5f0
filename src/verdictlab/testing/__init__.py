"""Test helpers shipped with verdictlab: a fault-injecting fake OpenAI-compatible server.

``from verdictlab.testing import FakeOpenAIServer, FakeConfig``
"""

from .fake_openai import FAULT_KINDS, FakeConfig, FakeOpenAIProcess, FakeOpenAIServer

__all__ = ["FAULT_KINDS", "FakeConfig", "FakeOpenAIProcess", "FakeOpenAIServer"]
