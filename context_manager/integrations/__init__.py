"""Framework integrations, each an optional extra imported only when used.

- :mod:`.openai_agents`: an Agents SDK ``Session`` that stores everything and serves the trimmed,
  provider-valid view; :mod:`.openai_agents_filters`: a ``call_model_input_filter`` that trims
  every model call and a hand-off ``input_filter`` that projects the conversation for the
  receiving agent.
- :mod:`.langchain_agents`: a middleware for LangChain v1 ``create_agent``.
- :mod:`.langgraph`: a ``pre_model_hook`` for a LangGraph graph (or ``create_react_agent``).
- :mod:`.pydantic_ai`: a capability that trims each request and leaves the agent's history whole.

Each counts what the framework sends beside the messages (the system prompt or instructions and
the tool schemas) against the budget, follows the framework's message list with a manager
(:mod:`._tracker`, counting only new messages), accepts the manager's options (``max_tokens``,
``model``, ``counter``, ``strategy``, ``provider``, ...) and reuses the core; nothing here is
imported by the core.
"""
