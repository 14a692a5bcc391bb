//! placeholder (sim helper)
