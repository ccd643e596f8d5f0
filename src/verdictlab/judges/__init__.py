"""Judge backends by id prefix.  ``make_judge("sim:skill=0.8,...")``."""

from .base import (
    JUDGES,
    JudgeAPI,
    JudgeCallError,
    JudgeConfigError,
    JudgeRequest,
    JudgeResponse,
    RetryDecision,
    RetryKind,
    judge_prefixes,
    make_judge,
    register_judge,
)

register_judge("sim", "verdictlab.judges.sim:make_sim_judge",
               description="simulated judge: set accuracy, position bias, noise (tests, planning)")
register_judge("llamacpp", "verdictlab.judges.llamacpp:make_llamacpp_judge",
               description="embedded local GGUF model (llama-cpp-python)", extra="local")
register_judge("openai", "verdictlab.judges.openai_api:make_openai_judge",
               description="OpenAI chat completions", extra="openai")
register_judge("openai-compatible", "verdictlab.judges.openai_api:make_openai_compatible_judge",
               description="any OpenAI-compatible server (vLLM, llama.cpp server, Ollama, hosted)",
               extra="openai")
register_judge("anthropic", "verdictlab.judges.anthropic_api:make_anthropic_judge",
               description="Anthropic messages API", extra="anthropic")
register_judge("python", "verdictlab.judges.python_function:make_python_judge",
               description="a Python function of yours: python:package.module:function, or python:NAME "
                           "registered with @verdictlab.judge")
register_judge("vllm", "verdictlab.judges.vllm_offline:make_vllm_judge",
               description="vLLM offline batch generation on a GPU")

__all__ = [
    "JUDGES",
    "JudgeAPI",
    "JudgeCallError",
    "JudgeConfigError",
    "JudgeRequest",
    "JudgeResponse",
    "RetryDecision",
    "RetryKind",
    "judge_prefixes",
    "make_judge",
    "register_judge",
]
