"""The answer path: the pipeline that runs each step once (``pipeline``), the record it fills (``prepared``), the
list step (``listed``), follow-ups (``followup``), citations, generation and its check (``citations``,
``generate``), the chat-model contract (``llm``), the reply budget on the wire (``wire``) and system-role handling (``system_role``), prompt templates (``prompts``) and the process-wide
factories (``service``).

Imports: ``relevance`` and what is before it."""

from assistant import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "followup": ("in_focus", "listed_turn"),
    "generate": ("as_data",),
    "listed": ("listed_from",),
    "llm": ("OpenAIChat", "explain_llm_error"),
    "pipeline": ("Assistant",),
    "prompts": ("answer_prompt", "compare_prompt", "related_prompt"),
    "system_role": ("fold_system", "system_role_kept"),
    "wire": ("LLMReplyOverBudget", "LLMStreamIncomplete", "call_within", "endpoint_client", "over_budget"),
    "service": ("EMPTY_INDEX", "corpus_to_refresh", "forget_indexes", "get_assistant", "get_index", "rebuild_index",
                "require_papers", "writer_of"),
})
