"""Test helpers shipped with verdictlab: a fault-injecting fake OpenAI-compatible server, and a raw
HTTP/1.x server that writes the replies a transport conformance test needs byte for byte.

``from verdictlab.testing import FakeOpenAIServer, FakeConfig, RawHTTPServer, RawReply``
"""

from .fake_openai import FAULT_KINDS, FakeConfig, FakeOpenAIProcess, FakeOpenAIServer
from .raw_http import RawHTTPServer, RawReply

__all__ = ["FAULT_KINDS", "FakeConfig", "FakeOpenAIProcess", "FakeOpenAIServer", "RawHTTPServer", "RawReply"]
