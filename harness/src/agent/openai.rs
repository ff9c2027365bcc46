//! The OpenAI-compatible chat-completions agent.
