//! specgap-agents (under construction).
