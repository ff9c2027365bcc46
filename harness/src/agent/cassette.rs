//! The model-call cassette (see the `openai` agent).
