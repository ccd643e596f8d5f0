"""Judge backends by id prefix.  ``make_judge("sim:skill=0.8,...")``."""

from .base import (
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

register_judge("sim", "verdictlab.judges.sim:make_sim_judge")
register_judge("llamacpp", "verdictlab.judges.llamacpp:make_llamacpp_judge")
register_judge("openai", "verdictlab.judges.openai_api:make_openai_judge")
register_judge("openai-compatible", "verdictlab.judges.openai_api:make_openai_compatible_judge")
register_judge("anthropic", "verdictlab.judges.anthropic_api:make_anthropic_judge")
register_judge("vllm", "verdictlab.judges.vllm_offline:make_vllm_judge")

__all__ = [
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
