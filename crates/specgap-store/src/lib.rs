//! specgap-store (under construction).
