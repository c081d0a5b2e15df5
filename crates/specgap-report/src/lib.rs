//! specgap-report (under construction).
