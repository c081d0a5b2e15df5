//! specgap-sandbox (under construction).
