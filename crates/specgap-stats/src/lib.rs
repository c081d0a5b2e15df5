//! specgap-stats (under construction).
