//! The relay owner on a bundled package (placeholder).
