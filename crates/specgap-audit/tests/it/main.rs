//! Integration tests of specgap-audit.
