//! placeholder (connection helper)
