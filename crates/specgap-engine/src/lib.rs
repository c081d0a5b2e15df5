//! specgap-engine (under construction).
