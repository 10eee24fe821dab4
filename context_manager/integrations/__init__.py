"""Framework integrations, each an optional extra imported only when used.

- :mod:`.openai_agents`: an Agents SDK ``Session`` that stores everything and serves the trimmed,
  provider-valid view; a ``call_model_input_filter`` for users who keep their own session.
- :mod:`.langgraph`: a ``pre_model_hook`` for ``create_react_agent`` that keeps a manager in step
  with the graph state (counting only new messages).
- :mod:`.pydantic_ai`: a history processor (and ``ProcessHistory`` capability) for agents.

Each accepts the manager's options (``max_tokens``, ``model``, ``strategy``, ``provider``,
``retention_ratio``, ...) and reuses the core; nothing here is imported by the core.
"""
